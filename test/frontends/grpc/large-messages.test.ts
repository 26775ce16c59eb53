import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FIXTURES } from '../../helpers/paths.js';
import { startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';

// Messages far larger than HTTP/2's default 64 KiB windows, from grpc-js: a 1 MiB tensor in and out. The
// request arrives as many DATA frames; the response waits for the client's WINDOW_UPDATEs, DATA frame by frame,
// with its trailers after the last one. Several at once share the connection's window.

const ELEMENTS = 262_144;
let s: GrpcTestServer;

before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [`${FIXTURES}/big`], modelControlMode: 'explicit', loadModels: ['identity_fp32_1m'] });
});

after(async () => {
  await s.close();
});

function tensor(seed: number): Buffer {
  const values = new Float32Array(ELEMENTS);
  for (let i = 0; i < ELEMENTS; i++) values[i] = seed + i * 0.5;
  return Buffer.from(values.buffer);
}

function request(seed: number): object {
  return {
    model_name: 'identity_fp32_1m',
    id: String(seed),
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [ELEMENTS] }],
    raw_input_contents: [tensor(seed)],
  };
}

test('ModelInfer: 1 MiB in and 1 MiB out, eight calls at once on one connection, each answer whole', async () => {
  const seeds = [1, 2, 3, 4, 5, 6, 7, 8];
  const replies = await Promise.all(seeds.map((seed) => unary(s.client, 'ModelInfer', request(seed))));
  for (const [i, r] of replies.entries()) {
    assert.equal(r.id, String(seeds[i]));
    assert.ok(Buffer.from(r.raw_output_contents[0]).equals(tensor(seeds[i]!)), `call ${seeds[i]} came back whole`);
  }
});

test('ModelStreamInfer: three 1 MiB requests on one stream, three whole answers and then OK', async () => {
  const call = s.client.ModelStreamInfer();
  const answers: Array<{ id: string; out: Buffer }> = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (r: { error_message: string; infer_response: { id: string; raw_output_contents: Uint8Array[] } }) => {
      assert.equal(r.error_message, '');
      answers.push({ id: r.infer_response.id, out: Buffer.from(r.infer_response.raw_output_contents[0]!) });
    });
    call.on('error', reject);
    call.on('end', resolve);
  });
  for (const seed of [11, 12, 13]) call.write(request(seed));
  call.end();
  await done;
  assert.deepEqual(answers.map((a) => a.id).sort(), ['11', '12', '13']);
  for (const a of answers) assert.ok(a.out.equals(tensor(Number(a.id))), `answer ${a.id} whole`);
});
