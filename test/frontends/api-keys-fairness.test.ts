import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { FIXTURES } from '../helpers/paths.js';
import { postJson, request } from '../helpers/http.js';
import { connect, unary, type Client } from '../helpers/grpc.js';
import { spawnServer, tempRepository, type ServerProcess } from '../helpers/server.js';
import { until } from '../helpers/until.js';

// Fairness among API keys in a contended model's queue, through `nereid serve` as clients see it: one key
// floods `slow_fp32` (one instance, about 0.1 s a request, Triton's default scheduler) and another key's
// requests, over HTTP and gRPC, overtake the flood instead of waiting behind all of it. Checked by the order
// answers come back in, never by time.

const FLOOD = 'nrd_flood_key_for_the_fairness_test_0000000000';
const QUIET = 'nrd_quiet_key_for_the_fairness_test_0000000000';
const sha = (k: string): string => createHash('sha256').update(k).digest('hex');
let repo: { dir: string; remove(): Promise<void> };
let p: ServerProcess;
let client: Client;
let metricsUrl: string;

before(async () => {
  repo = await tempRepository([{ from: join(FIXTURES, 'slow', 'slow_fp32') }]);
  const config = join(repo.dir, 'slow_fp32', 'config.pbtxt');
  // Placement known (no probe runs at load); one thread leaves the other core to the clients.
  await writeFile(config, `${await readFile(config, 'utf8')}\nparameters { key: "nereid_execution_placement" value { string_value: "worker" } }\nparameters { key: "intra_op_thread_count" value { string_value: "1" } }\n`);
  const keys = join(repo.dir, 'keys');
  await writeFile(keys, `flood inference ${sha(FLOOD)}\nquiet inference ${sha(QUIET)}\n`, { mode: 0o600 });
  p = await spawnServer([
    '--model-repository', repo.dir, `--api-keys-file=${keys}`,
    '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--allow-metrics=true', '--metrics-port=0',
  ]);
  const started = (what: string): RegExp => new RegExp(`Started ${what} at [^:]+:(\\d+)`);
  await until(() => ['GRPCInferenceService', 'Metrics Service'].every((w) => started(w).test(p.output())), 'the gRPC and metrics ports');
  metricsUrl = `http://127.0.0.1:${started('Metrics Service').exec(p.output())![1]}/metrics`;
  client = connect(Number(started('GRPCInferenceService').exec(p.output())![1]));
  await until(async () => (await request(`${p.url}/v2/health/ready`)).status === 200, 'readiness');
});

after(async () => {
  client?.close();
  p?.child.kill('SIGTERM');
  if (p) assert.equal(await p.exited, 0, p.output());
  await repo?.remove();
});

const body = (v: number) => ({ inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(v) }] });
const pending = async (): Promise<number> => {
  const m = /^nv_inference_pending_request_count\{model="slow_fp32",version="1"\} (\d+)/m.exec((await request(metricsUrl)).body.toString());
  return m ? Number(m[1]) : 0;
};

test('one key flooding a model delays another key\'s requests by about one of its own, not by its whole flood', async () => {
  const order: string[] = [];
  const done = (tag: string) => (r: { status: number }): void => {
    assert.equal(r.status, 200, tag);
    order.push(tag);
  };
  const flood = Array.from({ length: 14 }, (_, i) => postJson(`${p.url}/v2/models/slow_fp32/infer`, body(i), { authorization: `Bearer ${FLOOD}` }).then(done(`f${i}`)));
  await until(async () => (await pending()) >= 10, 'the flood to wait in the model\'s queue');
  const meta = new grpc.Metadata();
  meta.set('authorization', `Bearer ${QUIET}`);
  const quiet = [
    postJson(`${p.url}/v2/models/slow_fp32/infer`, body(100), { authorization: `Bearer ${QUIET}` }).then(done('http')),
    unary(client, 'ModelInfer', {
      model_name: 'slow_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [Buffer.from(new Float32Array(16).fill(200).buffer)],
    }, { metadata: meta }).then(() => void order.push('grpc')),
  ];
  await Promise.all([...flood, ...quiet]);
  // Each quiet request waits behind at most one flood request queued after it came (plus those already running
  // or handed out), where first come, first served would put it behind ten or more.
  for (const tag of ['http', 'grpc']) {
    const floodBefore = order.indexOf(tag) - order.slice(0, order.indexOf(tag)).filter((t) => !t.startsWith('f')).length;
    assert.ok(floodBefore <= 14 - 10 + 3, `${tag} answered after ${floodBefore} of the flood's requests: ${order.join(' ')}`);
  }
});
