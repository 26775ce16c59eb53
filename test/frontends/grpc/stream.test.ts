import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { int32Bytes, int32s, rawCall, requestType, streamResponseType, startGrpcTestServer, type GrpcTestServer } from '../../helpers/grpc.js';
import { AbortControllers } from '../../../src/frontends/grpc/abort-controllers.js';
import type { ServerCall } from '../../../src/frontends/grpc/call.js';
import type { ModelInferRequestMsg } from '../../../src/frontends/grpc/messages.js';
import { handleStreamInfer, type StreamContext } from '../../../src/frontends/grpc/stream.js';

// ModelStreamInfer as Triton's stream clients use it: decoupled repeat_int32, sequences sent on one stream with
// request ids, ordinary models, the empty final response, and both ways errors come back.

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'repeat_int32') }, { from: join(EXAMPLES, 'sequence_accumulator') }]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

interface StreamResult {
  responses: any[];
  status: grpc.StatusObject;
}

/** Sends every request on one stream, half-closes, and collects what comes back until the status. */
function stream(requests: unknown[], metadata = new grpc.Metadata()): Promise<StreamResult> {
  return new Promise((resolve) => {
    const call = s.client.ModelStreamInfer(metadata);
    const responses: any[] = [];
    call.on('data', (r: any) => responses.push(r));
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => resolve({ responses, status }));
    for (const r of requests) call.write(r);
    call.end();
  });
}

function repeat(id: string, values: number[], delays: number[], wait = 0, params: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_name: 'repeat_int32', id, parameters: params,
    inputs: [{ name: 'IN', datatype: 'INT32', shape: [values.length] }, { name: 'DELAY', datatype: 'UINT32', shape: [delays.length] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }],
    raw_input_contents: [int32Bytes(values), Buffer.from(new Uint32Array(delays).buffer), Buffer.from(new Uint32Array([wait]).buffer)],
  };
}

const finalFlag = (r: any): boolean => r.infer_response.parameters.triton_final_response?.bool_param;

test('decoupled repeat_int32: one response per element, in order, final flag only on an empty final response when asked', async () => {
  const { responses, status } = await stream([repeat('a', [10, 20, 30], [5, 5, 5], 0, { triton_enable_empty_final_response: { bool_param: true } })]);
  assert.equal(status.code, grpc.status.OK);
  assert.equal(responses.length, 4);
  assert.deepEqual(responses.slice(0, 3).map((r) => int32s(r.infer_response.raw_output_contents[r.infer_response.outputs.findIndex((o: any) => o.name === 'OUT')])[0]), [10, 20, 30]);
  assert.deepEqual(responses.map(finalFlag), [false, false, false, true]);
  const last = responses[3].infer_response;
  assert.deepEqual([last.id, last.model_name, last.outputs.length, responses[3].error_message], ['a', 'repeat_int32', 0, '']);
  for (const r of responses) assert.equal(r.infer_response.id, 'a');
});

test('decoupled without the empty final response: just the responses; zero elements give nothing', async () => {
  const { responses } = await stream([repeat('b', [1, 2], [0, 0]), repeat('c', [], [])]);
  assert.deepEqual(responses.map((r) => [r.infer_response.id, finalFlag(r)]), [['b', false], ['b', false]]);
  const empty = await stream([repeat('d', [], [], 0, { triton_enable_empty_final_response: { bool_param: true } })]);
  assert.deepEqual(empty.responses.map((r) => [r.infer_response.id, finalFlag(r), r.infer_response.outputs.length]), [['d', true, 0]]);
});

test('interleaved decoupled requests on one stream', async () => {
  const { responses } = await stream([repeat('slow', [1, 2], [60, 60]), repeat('fast', [7], [10])]);
  assert.deepEqual(responses.map((r) => r.infer_response.id), ['fast', 'slow', 'slow']);
});

test('ordinary model on a stream: one response per request, marked final', async () => {
  const req = (id: string) => ({
    model_name: 'simple', id,
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }],
    raw_input_contents: [int32Bytes(Array(16).fill(2)), int32Bytes(Array(16).fill(1))],
  });
  const { responses, status } = await stream([req('1'), req('2'), req('3')]);
  assert.equal(status.code, grpc.status.OK);
  assert.deepEqual(responses.map((r) => r.infer_response.id).sort(), ['1', '2', '3']);
  for (const r of responses) {
    assert.equal(finalFlag(r), true);
    assert.deepEqual(int32s(r.infer_response.raw_output_contents[0]), Array(16).fill(3));
  }
});

test('a stream per request (one message, then the half-close, as h2load sends it): its answer, then OK', async () => {
  const path = '/inference.GRPCInferenceService/ModelStreamInfer';
  const x = Array.from({ length: 16 }, (_, i) => i);
  const message = (inputs: unknown[], raw: Buffer[]) => Buffer.from(requestType.encode(requestType.fromObject({ model_name: 'simple', id: 'one', inputs, raw_input_contents: raw })).finish());
  const good = message([{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }], [int32Bytes(x), int32Bytes(x)]);
  // Several at once, so some answers find their stream half-closed and some may not yet.
  const replies = await Promise.all(Array.from({ length: 8 }, () => rawCall(s.grpc.port, path, good, false)));
  for (const reply of replies) {
    assert.equal(reply.status, '0', reply.message);
    const r = streamResponseType.decode(reply.body) as any;
    assert.equal(r.error_message, '');
    assert.equal(r.infer_response.id, 'one');
    assert.equal(finalFlag(r), true);
    assert.deepEqual(int32s(Buffer.from(r.infer_response.raw_output_contents[0])), x.map((v) => 2 * v));
  }
  // One that fails while the model has it is answered on the stream, which still ends OK.
  const bad = await rawCall(s.grpc.port, path, message([{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 8] }], [int32Bytes(x), int32Bytes(x.slice(0, 8))]), false);
  assert.equal(bad.status, '0', bad.message);
  assert.match((streamResponseType.decode(bad.body) as any).error_message, /INPUT1/);
});

test('a sequence over one stream, with request ids, as simple_grpc_sequence_stream_infer_client sends it', async () => {
  const step = (seq: number | string, value: number, start: boolean, end: boolean) => ({
    model_name: 'sequence_accumulator', id: `${seq}-${value}`,
    parameters: {
      sequence_id: typeof seq === 'number' ? { int64_param: String(seq) } : { string_param: seq },
      sequence_start: { bool_param: start }, sequence_end: { bool_param: end },
    },
    inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], contents: { int_contents: [value] } }],
  });
  const { responses } = await stream([
    step(1000, 0, true, false), step('abc', 100, true, false), step(1000, 1, false, false), step('abc', 1, false, false),
    step(1000, 2, false, true), step('abc', 2, false, true),
  ]);
  const byId = new Map(responses.map((r) => [r.infer_response.id, int32s(r.infer_response.raw_output_contents[0])[0]]));
  assert.deepEqual([byId.get('1000-0'), byId.get('1000-1'), byId.get('1000-2')], [0, 1, 3]);
  assert.deepEqual([byId.get('abc-100'), byId.get('abc-1'), byId.get('abc-2')], [100, 101, 103]);
});

test('errors go in error_message and the stream stays open', async () => {
  const bad = { model_name: 'nope', id: 'x' };
  const { responses, status } = await stream([bad, repeat('ok', [5], [0])]);
  assert.equal(status.code, grpc.status.OK);
  const err = responses.find((r) => r.error_message !== '');
  assert.match(err.error_message, /unknown model: 'nope'/);
  assert.equal(err.infer_response.id, 'x');
  assert.ok(responses.some((r) => r.infer_response.id === 'ok' && r.error_message === ''));
  // A failure while the model runs (IN and DELAY shapes differ) names the model and is final.
  const during = await stream([{ ...repeat('m', [1, 2], [0]), inputs: [{ name: 'IN', datatype: 'INT32', shape: [2] }, { name: 'DELAY', datatype: 'UINT32', shape: [1] }, { name: 'WAIT', datatype: 'UINT32', shape: [1] }] }]);
  assert.equal(during.responses.length, 1);
  assert.match(during.responses[0].error_message, /shape/);
  assert.equal(during.responses[0].infer_response.model_name, 'repeat_int32');
  assert.equal(finalFlag(during.responses[0]), true);
});

test('with triton_grpc_error: true the first error ends the stream with its status', async () => {
  const md = new grpc.Metadata();
  md.set('triton_grpc_error', 'true');
  const { status } = await stream([{ model_name: 'simple', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 3] }], raw_input_contents: [int32Bytes([1, 2, 3])] }], md);
  assert.equal(status.code, grpc.status.INVALID_ARGUMENT);
  assert.match(status.details, /INPUT0/);
});

test('cancelling the stream cancels its requests', async () => {
  const call = s.client.ModelStreamInfer();
  const got: any[] = [];
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.on('error', () => {});
  call.on('data', (r: any) => {
    got.push(r);
    if (got.length === 1) call.cancel();
  });
  call.write(repeat('long', [1, 2, 3, 4, 5], [0, 100, 100, 100, 100]));
  assert.equal((await ended).code, grpc.status.CANCELLED);
  await new Promise((r) => setTimeout(r, 250));
  assert.equal(got.length, 1);
  // The model saw the cancellation: the stream's request counts as failed, not as a success.
  const stats = s.server.statistics('repeat_int32').model_stats[0] as any;
  assert.ok(stats.inference_stats.fail.count >= 1);
});

test('a stream per request answered as its model runs: headers, message and OK leave as one response', async () => {
  // The stream's handler against a call that records what it is asked to send. Once requests have come one per
  // turn for a while, the model runs each as it comes, so the answer is given inside the message's delivery.
  const x = Array.from({ length: 16 }, (_, i) => i);
  const msg = {
    model_name: 'simple', model_version: '', id: 'one', parameters: {}, outputs: [],
    inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], parameters: {}, contents: null })),
    raw_input_contents: [int32Bytes(x), int32Bytes(x)],
  } as unknown as ModelInferRequestMsg;
  const ctx: StreamContext = {
    server: s.server, logger: s.logger, decode: () => msg, forwarded: () => undefined, controllers: new AbortControllers(),
    frame: () => Buffer.alloc(5),
  };
  const open = (): { sent: string[]; message(last: boolean): void; halfClose(): void } => {
    const sent: string[] = [];
    let onMessage: (m: Buffer, last: boolean) => void = () => {};
    let onHalfClose: () => void = () => {};
    const call = {
      ended: false,
      get: () => undefined,
      onCancel: () => {},
      read: (m: typeof onMessage, h: typeof onHalfClose) => {
        onMessage = m;
        onHalfClose = h;
      },
      write: () => sent.push('message'),
      respond: () => {
        sent.push('message and OK');
        call.ended = true;
      },
      end: (status: { code: number }) => {
        if (call.ended) return;
        sent.push(`status ${status.code}`);
        call.ended = true;
      },
    };
    handleStreamInfer(ctx, call as unknown as ServerCall);
    return { sent, message: (last) => onMessage(Buffer.alloc(0), last), halfClose: () => onHalfClose() };
  };
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  for (let i = 0; i < 80; i++) {
    const c = open();
    c.message(true);
    c.halfClose();
    await settle();
  }
  // The half-close came with the message: the answer, given at once, ends the stream with it.
  const withEnd = open();
  withEnd.message(true);
  assert.deepEqual(withEnd.sent, ['message and OK'], 'answered inside the delivery, in one response');
  withEnd.halfClose();
  await settle();
  assert.deepEqual(withEnd.sent, ['message and OK']);
  // The half-close came after (an empty DATA frame of its own): the answer goes first, OK when it comes.
  const later = open();
  later.message(false);
  assert.deepEqual(later.sent, ['message']);
  later.halfClose();
  assert.deepEqual(later.sent, ['message', `status ${grpc.status.OK}`]);
  // Several messages in one stream, the last with the half-close: OK follows the last answer.
  const several = open();
  several.message(false);
  several.message(true);
  await settle();
  assert.deepEqual(several.sent, ['message', 'message and OK']);
});
