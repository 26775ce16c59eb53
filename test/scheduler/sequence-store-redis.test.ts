import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { InferenceServer } from '../../src/server/inference-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { storeWaitMs } from '../../src/scheduler/sequence-store-redis.js';
import { EXAMPLES } from '../helpers/paths.js';
import { REDIS_SKIP, freeRedisPort, startRedis } from '../helpers/redis.js';

// --sequence-state-store against a real redis-server, reached through a TCP relay that can hold back what the
// server sends: Redis stays up (its clock and key expiry run on) while this server's commands get no answer,
// as in a network stall. sequence_accumulator's sequences expire after 5 s idle.

const skip = REDIS_SKIP;


/** A relay to Redis; while `held`, the commands it receives wait and are passed on once released. */
class Relay {
  held = false;
  private readonly waiting: (() => void)[] = [];
  private readonly sockets = new Set<Socket>();
  private server: Server | undefined;
  port = 0;

  async start(target: number): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect(target, '127.0.0.1');
      this.sockets.add(client).add(upstream);
      client.on('data', (b) => (this.held ? this.waiting.push(() => upstream.write(b)) : upstream.write(b)));
      upstream.on('data', (b) => client.write(b));
      const end = (): void => void (client.destroy(), upstream.destroy());
      client.on('close', end).on('error', end);
      upstream.on('close', end).on('error', end);
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
  }

  release(): void {
    this.held = false;
    for (const send of this.waiting.splice(0)) send();
  }

  close(): void {
    for (const s of this.sockets) s.destroy();
    this.server?.close();
  }
}

const quiet = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
let redis: ChildProcess | undefined;
const relay = new Relay();
let server: InferenceServer;

before(async () => {
  if (skip) return;
  const port = await freeRedisPort();
  redis = await startRedis(port);
  await relay.start(port);
  server = await InferenceServer.create({
    modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['sequence_accumulator'],
    sequenceStateStore: `redis://127.0.0.1:${relay.port}`,
  }, { logger: quiet });
});
after(async () => {
  if (skip) return;
  relay.release();
  await server.close(5);
  relay.close();
  redis?.kill();
});

async function step(seq: number, value: number, f: { start?: boolean; end?: boolean; id: string }): Promise<number> {
  const r = await server.infer({
    model: 'sequence_accumulator', id: f.id, sequenceId: seq, sequenceStart: f.start ?? false, sequenceEnd: f.end ?? false,
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: new Uint8Array(new Int32Array([value]).buffer) }],
  });
  const out = r.outputs[0]!.data as Uint8Array;
  return new DataView(out.buffer, out.byteOffset, 4).getInt32(0, true);
}

test('a step waits for the store a quarter of the idle time, at most 5 s', () => {
  assert.equal(storeWaitMs(5000), 1250);
  assert.equal(storeWaitMs(1000), 250);
  assert.equal(storeWaitMs(3_600_000), 5000);
});

test('a store that stalls: the step is refused while its sequence is alive, and sending it again continues the sequence', { skip }, async () => {
  assert.equal(await step(7, 5, { start: true, id: '7a' }), 5);
  relay.held = true;
  // Refused after 1.25 s, well inside the 5 s idle time. (Waiting 5 s, as the store did, refused it only once
  // Redis had expired the sequence, and the retry below then failed with "must specify the START flag".)
  await assert.rejects(step(7, 6, { id: '7b' }), (e: { code?: string; message: string }) => {
    assert.equal(e.code, 'UNAVAILABLE');
    assert.match(e.message, /sequence state store did not answer for model 'sequence_accumulator'; the step was not applied/);
    return true;
  });
  relay.release();
  assert.equal(await step(7, 6, { id: '7b' }), 11);
  assert.equal(await step(7, 1, { end: true, id: '7c' }), 12);
});

test('a store that cannot be reached at start-up: the server does not start, and the message says why', { skip }, async () => {
  const closed = await freeRedisPort();
  await assert.rejects(
    InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', sequenceStateStore: `redis://127.0.0.1:${closed}` }, { logger: quiet }),
    new RegExp(`^NereidError: --sequence-state-store redis://127\\.0\\.0\\.1:${closed}: cannot reach Redis: connect ECONNREFUSED`),
  );
});
