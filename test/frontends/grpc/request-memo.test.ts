import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { failure, int32Bytes, int32s, requestType, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { checkInferRequestBounds, Known, Refusal } from '../../../src/frontends/grpc/request-bounds.js';
import { InferRequestMemo, MEMO_PREFIX_BYTES } from '../../../src/frontends/grpc/request-memo.js';
import { MISS_RUN, PROBE, REST_FIRST } from '../../../src/frontends/bytes-memo.js';
import { decodeInferRequest } from '../../../src/frontends/grpc/infer-request.js';
import type { ModelInferRequestMsg } from '../../../src/frontends/grpc/messages.js';
import type { ResolvedModel } from '../../../src/server/inference-server.js';

// ModelInfer requests whose fields before their tensors repeat: those fields are decoded once per server and
// remembered (request-memo.ts); every request still gets its own tensors, and its own checks.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'simple_identity') }]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['simple', 'simple_identity'] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const IN0 = Array.from({ length: 16 }, (_, i) => i);
const TWOS = new Array(16).fill(2);

function message(fields: Record<string, unknown>): Buffer {
  return Buffer.from(requestType.encode(requestType.fromObject(fields)).finish());
}

const simple = (raw: Buffer[], names = ['INPUT0', 'INPUT1'], extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  model_name: 'simple',
  inputs: names.map((name) => ({ name, datatype: 'INT32', shape: [1, 16] })),
  raw_input_contents: raw,
  ...extra,
});

describe('the bounds check with a memo', () => {
  test('a message whose fields before its tensors were seen comes back decoded, with its own tensors', () => {
    const memo = new InferRequestMemo();
    const first = message(simple([int32Bytes(IN0), int32Bytes(TWOS)], undefined, { id: 'a', parameters: { p: { int64_param: 3 } } }));
    const r = checkInferRequestBounds(first, s.server, memo);
    assert.ok(!(r instanceof Known));
    memo.keep(first, (r as ResolvedModel).bounds, requestType.decode(first) as never);
    const second = message(simple([int32Bytes(TWOS), int32Bytes(IN0)], undefined, { id: 'a', parameters: { p: { int64_param: 3 } } }));
    const k = checkInferRequestBounds(second, s.server, memo);
    assert.ok(k instanceof Known);
    const m = k.message;
    assert.equal(m.model_name, 'simple');
    assert.equal(m.id, 'a');
    assert.equal(m.model_version, '');
    assert.deepEqual(m.inputs.map((t) => t.name), ['INPUT0', 'INPUT1']);
    assert.deepEqual(m.raw_input_contents.map(int32s), [TWOS, IN0]);
    assert.equal(m.resolved?.name, 'simple');
    // What requests share is frozen; the request's own fields are its own.
    assert.ok(Object.isFrozen(m.inputs) && Object.isFrozen(m.inputs[0]) && Object.isFrozen(m.parameters));
    // Other bytes before the tensors (the inputs named the other way round): checked and decoded anew.
    assert.ok(!(checkInferRequestBounds(message(simple([int32Bytes(IN0), int32Bytes(TWOS)], ['INPUT1', 'INPUT0'], { id: 'a', parameters: { p: { int64_param: 3 } } })), s.server, memo) instanceof Known));
  });

  test('not remembered: typed contents, a field after the tensors, fields past MEMO_PREFIX_BYTES', () => {
    const memo = new InferRequestMemo();
    const seenTwice = (b: Buffer): boolean => {
      const r = checkInferRequestBounds(b, s.server, memo);
      if (!(r instanceof Known)) memo.keep(b, (r as ResolvedModel).bounds, requestType.decode(b) as never);
      return checkInferRequestBounds(b, s.server, memo) instanceof Known;
    };
    const contents = message({ model_name: 'simple', inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], contents: { int_contents: IN0 } })) });
    assert.equal(seenTwice(contents), false);
    // The id after the tensors (proto3: fields may come in any order): the bytes before them do not say it all.
    const after = Buffer.concat([message(simple([int32Bytes(IN0), int32Bytes(TWOS)])), message({ id: 'late' })]);
    assert.equal(seenTwice(after), false);
    const long = message(simple([int32Bytes(IN0), int32Bytes(TWOS)], undefined, { id: 'x'.repeat(MEMO_PREFIX_BYTES) }));
    assert.equal(seenTwice(long), false);
    assert.equal(seenTwice(message(simple([int32Bytes(IN0), int32Bytes(TWOS)]))), true);
  });

  test('a remembered message decodes to the request its whole decode gives', () => {
    const memo = new InferRequestMemo();
    const extra = { id: 'x', parameters: { p: { int64_param: 3 }, priority: { uint64_param: 1 } }, outputs: [{ name: 'OUTPUT1' }] };
    const known = (b: Buffer): ModelInferRequestMsg => {
      const r = checkInferRequestBounds(b, s.server, memo);
      if (r instanceof Known) return r.message;
      memo.keep(b, (r as ResolvedModel).bounds, requestType.decode(b) as never);
      return (checkInferRequestBounds(b, s.server, memo) as Known).message;
    };
    const first = known(message(simple([int32Bytes(IN0), int32Bytes(TWOS)], undefined, extra)));
    const b = message(simple([int32Bytes(TWOS), int32Bytes(IN0)], undefined, extra));
    const second = known(b);
    const whole = decodeInferRequest(requestType.decode(b) as never, undefined, undefined).request;
    const fromMemo = decodeInferRequest(second, undefined, undefined).request;
    assert.deepEqual(fromMemo, whole);
    assert.deepEqual(fromMemo.inputs.map((t) => int32s(t.data as Buffer)), [TWOS, IN0]);
    assert.deepEqual(decodeInferRequest(first, undefined, undefined).request.inputs.map((t) => int32s(t.data as Buffer)), [IN0, TWOS]);
    // Headers forwarded to the model join the remembered parameters, for this request only.
    assert.deepEqual(decodeInferRequest(second, undefined, { h: 'v' }).request.parameters, { h: 'v', p: 3 });
    assert.deepEqual(decodeInferRequest(second, undefined, undefined).request.parameters, { p: 3 });
  });

  test('a remembered message whose fields do not decode fails as the whole message does, every time', () => {
    const memo = new InferRequestMemo();
    const b = message({ model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'NOPE', shape: [1, 16] }], raw_input_contents: [int32Bytes(IN0)] });
    const r = checkInferRequestBounds(b, s.server, memo) as ResolvedModel;
    // As the frontend decodes a message the first time: with the model its check looked up.
    const whole = Object.assign(requestType.decode(b), { resolved: r }) as never as ModelInferRequestMsg;
    const error = (m: ModelInferRequestMsg): string => {
      try {
        decodeInferRequest(m, undefined, undefined);
      } catch (e) {
        return (e as Error).message;
      }
      return 'decoded';
    };
    const expected = error(whole);
    assert.match(expected, /NOPE/);
    memo.keep(b, r.bounds, requestType.decode(b) as never);
    for (let i = 0; i < 2; i++) assert.equal(error((checkInferRequestBounds(b, s.server, memo) as Known).message), expected);
  });

  test('a model loaded again has new bounds: its first request is checked and decoded anew', async () => {
    const memo = new InferRequestMemo();
    const b = message(simple([int32Bytes(IN0), int32Bytes(TWOS)]));
    const r = checkInferRequestBounds(b, s.server, memo) as ResolvedModel;
    memo.keep(b, r.bounds, requestType.decode(b) as never);
    assert.ok(checkInferRequestBounds(b, s.server, memo) instanceof Known);
    await s.server.unloadModel('simple');
    // Remembered, but its model is gone: refused as any request to it is.
    const gone = checkInferRequestBounds(b, s.server, memo);
    assert.ok(gone instanceof Refusal);
    assert.match(gone.error.message, /simple/);
    await s.server.loadModel('simple');
    assert.ok(!(checkInferRequestBounds(b, s.server, memo) instanceof Known));
  });
});

describe('over gRPC', () => {
  test('calls of the same shapes are answered from their own tensors', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await unary(s.client, 'ModelInfer', simple([int32Bytes(IN0.map((v) => v * i)), int32Bytes(TWOS)]));
      assert.deepEqual(int32s(res.raw_output_contents[1]), IN0.map((v) => v * i - 2));
    }
  });

  test('a remembered message still has its tensors checked: one missing, one too short, one too many', async () => {
    await unary(s.client, 'ModelInfer', simple([int32Bytes(IN0), int32Bytes(TWOS)]));
    const missing = await failure(unary(s.client, 'ModelInfer', simple([int32Bytes(IN0)])));
    assert.match(missing.details, /unable to find data for input tensor 'INPUT1' for model 'simple'/);
    const short = await failure(unary(s.client, 'ModelInfer', simple([int32Bytes(IN0), int32Bytes(TWOS).subarray(0, 60)])));
    assert.match(short.details, /INPUT1/);
    const extra = await failure(unary(s.client, 'ModelInfer', simple([int32Bytes(IN0), int32Bytes(TWOS), int32Bytes(TWOS)])));
    assert.match(extra.details, /raw_input_contents' has 3 entries but the request to model 'simple' has only 2 inputs/);
  });

  test('calls with an id of their own each, past the rests of the memo, then repeated ones: each answered as its own', async () => {
    // Enough of them that the memos (the fields', the HTTP/2 header block's) rest and probe again (bytes-memo.ts).
    const n = MISS_RUN + REST_FIRST + PROBE + 2 * MISS_RUN;
    const ids = Array.from({ length: n }, (_, i) => `call-${String(i).padStart(4, '0')}`);
    for (const [i, id] of [...ids, 'repeated', 'repeated', 'repeated'].entries()) {
      const res = await unary(s.client, 'ModelInfer', simple([int32Bytes(IN0.map((v) => v * i)), int32Bytes(TWOS)], undefined, { id }));
      assert.equal(res.id, id);
      assert.deepEqual(int32s(res.raw_output_contents[1]), IN0.map((v) => v * i - 2));
    }
  });

  test('the same fields to another model are checked against that model', async () => {
    await unary(s.client, 'ModelInfer', simple([int32Bytes(IN0), int32Bytes(TWOS)]));
    const other = await failure(unary(s.client, 'ModelInfer', { ...simple([int32Bytes(IN0), int32Bytes(TWOS)]), model_name: 'simple_identity' }));
    assert.match(other.details, /expected 1 inputs but got 2 inputs for model 'simple_identity'/);
  });
});
