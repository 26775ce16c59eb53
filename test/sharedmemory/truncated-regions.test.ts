import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../helpers/paths.js';
import { spawnServer, tempRepository, type ServerProcess } from '../helpers/server.js';
import { binaryBody, postJson, request, splitBinary, type Reply } from '../helpers/http.js';
import { connect, failure, int32s, unary, type Client } from '../helpers/grpc.js';
import { createShmObject, int32Bytes } from '../helpers/shm.js';

// A client registers a region, then shrinks its object (ftruncate to 0) and names the region in a request. Reading
// or writing the missing pages of a mapping raises SIGBUS, which used to kill the server. Each such request must get
// a clear error of its own, and the server must go on answering everyone else. The server runs as its own process,
// so that a crash fails these tests instead of ending the test runner.

let repo: { dir: string; remove(): Promise<void> };
let srv: ServerProcess;
let client: Client;
const objects: { remove(): void }[] = [];

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  srv = await spawnServer([`--model-repository=${repo.dir}`, '--allow-client-shm=true', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1']);
  client = connect(await grpcPort(srv));
});
after(async () => {
  client.close();
  srv.child.kill('SIGKILL');
  await srv.exited;
  await repo.remove();
  objects.forEach((o) => o.remove());
});

/** The gRPC port the child reports once its gRPC frontend listens (it may come after the HTTP one). */
async function grpcPort(p: ServerProcess): Promise<number> {
  for (;;) {
    const m = /Started GRPCInferenceService at [^:]+:(\d+)/.exec(p.output());
    if (m) return Number(m[1]);
    if (p.child.exitCode !== null) throw new Error(`the server exited:\n${p.output()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const A = Array.from({ length: 16 }, (_, i) => i);
const B = Array.from({ length: 16 }, (_, i) => 3 * i + 1);
const SUM = A.map((a, i) => a + B[i]!);

const httpShm = (region: string) => ({ shared_memory_region: region, shared_memory_byte_size: 64 });
const grpcShm = (region: string) => ({ shared_memory_region: { string_param: region }, shared_memory_byte_size: { int64_param: '64' } });

/** The error a request gets, over either protocol: HTTP status or gRPC code, and the message. */
interface Outcome { status: number | string; message: string }

async function http(reply: Promise<Reply>): Promise<Outcome> {
  const r = await reply;
  return { status: r.status, message: r.status === 200 ? '' : (r.json() as { error: string }).error };
}

async function rpc(call: Promise<unknown>): Promise<Outcome> {
  const e = await failure(call);
  return { status: grpc.status[e.code], message: e.details };
}

const inferUrl = () => `${srv.url}/v2/models/simple/infer`;

/** Ways to name a shrunk region, over each protocol, with the region in an input or an output. */
const ATTACKS: { name: string; send(region: string): Promise<Outcome>; expect: number | string }[] = [
  {
    name: 'HTTP, JSON request, INPUT0 from the region',
    expect: 400,
    send: (region) => http(postJson(inferUrl(), {
      inputs: [
        { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: httpShm(region) },
        { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: B },
      ],
    })),
  },
  {
    name: 'HTTP, binary request, INPUT1 from the region, OUTPUT0 as binary data',
    expect: 400,
    send: (region) => {
      const b = binaryBody({
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: httpShm(region) },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
      }, [int32Bytes(A)]);
      return http(request(inferUrl(), { body: b.body, headers: b.headers }));
    },
  },
  {
    name: 'HTTP, binary request, OUTPUT0 into the region',
    expect: 400,
    send: (region) => {
      const b = binaryBody({
        inputs: [
          { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
          { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } },
        ],
        outputs: [{ name: 'OUTPUT0', parameters: httpShm(region) }],
      }, [int32Bytes(A), int32Bytes(B)]);
      return http(request(inferUrl(), { body: b.body, headers: b.headers }));
    },
  },
  {
    name: 'gRPC, INPUT0 from the region',
    expect: 'INVALID_ARGUMENT',
    send: (region) => rpc(unary(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: grpcShm(region) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] },
      ],
      raw_input_contents: [int32Bytes(B)],
    })),
  },
  {
    name: 'gRPC, OUTPUT1 into the region',
    expect: 'INVALID_ARGUMENT',
    send: (region) => rpc(unary(client, 'ModelInfer', {
      model_name: 'simple',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
      raw_input_contents: [int32Bytes(A), int32Bytes(B)],
      outputs: [{ name: 'OUTPUT1', parameters: grpcShm(region) }],
    })),
  },
];

/** A request that uses no shared memory, answered correctly: the server is still there and still right. */
async function assertServing(): Promise<void> {
  const r = await postJson(inferUrl(), {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: A },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: B },
    ],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: true } }],
  });
  assert.equal(r.status, 200, r.body.toString());
  const out = splitBinary(r).blobs.get('OUTPUT0')!;
  assert.deepEqual(Array.from(new Int32Array(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength))), SUM);
  const g = await unary(client, 'ModelInfer', {
    model_name: 'simple',
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(A), int32Bytes(B)],
  });
  assert.deepEqual(int32s(g.raw_output_contents[0]), SUM);
  assert.equal(srv.child.exitCode, null, srv.output());
}

for (const [i, attack] of ATTACKS.entries()) {
  test(`a region whose object shrank after registering: ${attack.name}`, async () => {
    // A whole page, so that the mapping covers it and the shrink takes every byte of it away.
    const o = createShmObject(Buffer.concat([int32Bytes(A), Buffer.alloc(4096 - 64)]));
    objects.push(o);
    const region = `shrunk_${i}`;
    const reg = await postJson(`${srv.url}/v2/systemsharedmemory/region/${region}/register`, { key: o.key, byte_size: 4096 });
    assert.equal(reg.status, 200, reg.body.toString());
    truncateSync(o.path, 0);

    const first = await attack.send(region);
    assert.equal(first.status, attack.expect, first.message);
    assert.match(first.message, new RegExp(`shared memory region '${region}' is smaller than registered`));
    await assertServing();

    // The region stays refused (its mapping no longer reaches the object) until the client registers it again.
    const again = await attack.send(region);
    assert.equal(again.status, attack.expect, again.message);
    assert.match(again.message, new RegExp(`shared memory region '${region}' is smaller than registered`));
    const un = await request(`${srv.url}/v2/systemsharedmemory/region/${region}/unregister`, { method: 'POST' });
    assert.equal(un.status, 200);
    await assertServing();
  });
}

test('a region that shrank and grew again before the request reads as the object now is', async () => {
  const o = createShmObject(Buffer.concat([int32Bytes(A), Buffer.alloc(4096 - 64)]));
  objects.push(o);
  const reg = await postJson(`${srv.url}/v2/systemsharedmemory/region/regrown/register`, { key: o.key, byte_size: 4096 });
  assert.equal(reg.status, 200, reg.body.toString());
  truncateSync(o.path, 0);
  truncateSync(o.path, 4096);
  const r = await postJson(inferUrl(), {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: httpShm('regrown') },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: B },
    ],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].data, B);
  await assertServing();
});
