import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RequestBounds } from '../../../src/inference/index.js';
import { decodeInferText } from '../../../src/frontends/http/json-parse.js';
import { HeaderMemo, MEMO_ENTRIES, MEMO_HEADER_BYTES } from '../../../src/frontends/http/header-memo.js';
import { MISS_RUN, PROBE, REST_FIRST } from '../../../src/frontends/bytes-memo.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { binaryBody, request, splitBinary } from '../../helpers/http.js';

const BOUNDS: RequestBounds = { model: 'simple', decoupled: false, inputs: 2, requiredInputs: 2, outputs: 2, rank: 2, inputElements: 128 };
const LIMIT = 64 << 20;

function binaryHeader(names: string[], extra: Record<string, unknown> = {}): Buffer {
  return Buffer.from(JSON.stringify({ ...extra, inputs: names.map((name) => ({ name, shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } })) }));
}

function decode(text: Buffer) {
  return decodeInferText(text.toString('utf8'), { bounds: BOUNDS, maxInputSize: LIMIT, packBytes: false, pooled: true });
}

describe('HeaderMemo', () => {
  test('finds a kept header by its bytes at the start of a longer body, for the same bounds and limit only', () => {
    const memo = new HeaderMemo();
    const text = binaryHeader(['INPUT0', 'INPUT1']);
    const body = Buffer.concat([text, Buffer.alloc(128, 7)]);
    assert.equal(memo.find(body, text.byteLength, BOUNDS, LIMIT), undefined);
    const header = memo.keep(body, text.byteLength, BOUNDS, LIMIT, decode(text));
    assert.equal(memo.find(Buffer.concat([text, Buffer.alloc(128, 9)]), text.byteLength, BOUNDS, LIMIT), header);
    // The same length with other bytes (the inputs in the other order), other bounds, another limit: not found.
    const swapped = binaryHeader(['INPUT1', 'INPUT0']);
    assert.equal(swapped.byteLength, text.byteLength);
    assert.equal(memo.find(swapped, swapped.byteLength, BOUNDS, LIMIT), undefined);
    assert.equal(memo.find(body, text.byteLength, { ...BOUNDS }, LIMIT), undefined);
    assert.equal(memo.find(body, text.byteLength, BOUNDS, LIMIT - 1), undefined);
    // A shorter length over the same bytes is another header.
    assert.equal(memo.find(body, text.byteLength - 1, BOUNDS, LIMIT), undefined);
  });

  test('a kept header is frozen throughout, as every request that finds it shares it', () => {
    const memo = new HeaderMemo();
    const text = binaryHeader(['INPUT0', 'INPUT1'], { parameters: { sequence_id: 5, note: 'x' } });
    const header = memo.keep(text, text.byteLength, BOUNDS, LIMIT, decode(text));
    assert.ok(Object.isFrozen(header));
    assert.ok(Object.isFrozen(header.inputs) && Object.isFrozen(header.inputs[0]) && Object.isFrozen(header.inputs[0]!.shape));
    assert.ok(Object.isFrozen(header.params) && Object.isFrozen(header.params.custom));
    assert.throws(() => {
      (header.inputs[0]!.shape as number[])[0] = 2;
    }, TypeError);
  });

  test('headers with tensor data, and headers past MEMO_HEADER_BYTES, are not kept', () => {
    const memo = new HeaderMemo();
    const withData = Buffer.from(JSON.stringify({ inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) })) }));
    const h = memo.keep(withData, withData.byteLength, BOUNDS, LIMIT, decode(withData));
    assert.ok(!Object.isFrozen(h));
    assert.equal(memo.find(withData, withData.byteLength, BOUNDS, LIMIT), undefined);
    const long = binaryHeader(['INPUT0', 'INPUT1'], { id: 'x'.repeat(MEMO_HEADER_BYTES) });
    memo.keep(long, long.byteLength, BOUNDS, LIMIT, decode(long));
    assert.equal(memo.find(long, long.byteLength, BOUNDS, LIMIT), undefined);
  });

  test(`holds the last ${MEMO_ENTRIES} headers kept`, () => {
    const memo = new HeaderMemo();
    const texts = Array.from({ length: MEMO_ENTRIES + 1 }, (_, i) => binaryHeader(['INPUT0', 'INPUT1'], { id: `request-${i}` }));
    for (const t of texts) memo.keep(t, t.byteLength, BOUNDS, LIMIT, decode(t));
    assert.equal(memo.find(texts[0]!, texts[0]!.byteLength, BOUNDS, LIMIT), undefined);
    for (const t of texts.slice(1)) assert.equal(memo.find(t, t.byteLength, BOUNDS, LIMIT)?.id, JSON.parse(t.toString()).id);
  });
});

describe('binary requests that repeat their header, against a server', () => {
  let s: TestServer;
  before(async () => {
    s = await startTestServer({ modelRepositories: [EXAMPLES] });
  });
  after(() => s.close());

  const ints = (xs: number[]): Buffer => Buffer.from(new Int32Array(xs).buffer);
  const range16 = Array.from({ length: 16 }, (_, i) => i);
  const twos16 = new Array(16).fill(2);

  async function infer(names: string[], blobs: Buffer[], model = 'simple') {
    const { body, headers } = binaryBody({
      inputs: names.map((name) => ({ name, shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } })),
      parameters: { binary_data_output: true },
    }, blobs);
    return request(`${s.url}/v2/models/${model}/infer`, { body, headers });
  }

  function output(r: Awaited<ReturnType<typeof infer>>, name: string): number[] {
    assert.equal(r.status, 200, r.body.toString());
    return [...new Int32Array(new Uint8Array(splitBinary(r).blobs.get(name)!).buffer)];
  }

  test('each request is answered from its own tensors, and a header of the same length with other bytes is read anew', async () => {
    for (let round = 0; round < 3; round++) {
      const r = await infer(['INPUT0', 'INPUT1'], [ints(range16.map((v) => v + round)), ints(twos16)]);
      assert.deepEqual(output(r, 'OUTPUT1'), range16.map((v) => v + round - 2));
    }
    // INPUT1 first: the same header length, the tensors the other way round.
    const r = await infer(['INPUT1', 'INPUT0'], [ints(range16), ints(twos16)]);
    assert.deepEqual(output(r, 'OUTPUT1'), range16.map((v) => 2 - v));
  });

  test('a remembered header still has its body checked, and a refused one is refused every time', async () => {
    await infer(['INPUT0', 'INPUT1'], [ints(range16), ints(twos16)]);
    const short = await infer(['INPUT0', 'INPUT1'], [ints(range16), ints(twos16).subarray(0, 60)]);
    assert.equal(short.status, 400);
    assert.match(short.json().error, /unexpected size for input 'INPUT1', expecting 4 additional bytes/);
    for (let i = 0; i < 2; i++) {
      const wrong = await infer(['INPUT0', 'INPUTX'], [ints(range16), ints(twos16)]);
      assert.equal(wrong.status, 400);
      assert.match(wrong.json().error, /INPUTX/);
    }
  });

  test('requests with an id of their own each, past the rests of the memo, then repeated ones: each answered as its own', async () => {
    // Enough of them that the memos (the JSON header's, the request head's) rest and probe again (bytes-memo.ts).
    const n = MISS_RUN + REST_FIRST + PROBE + 2 * MISS_RUN;
    const ids = Array.from({ length: n }, (_, i) => `request-${String(i).padStart(4, '0')}`);
    for (const [i, id] of [...ids, 'repeated', 'repeated', 'repeated'].entries()) {
      const { body, headers } = binaryBody({
        id,
        inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, shape: [1, 16], datatype: 'INT32', parameters: { binary_data_size: 64 } })),
        parameters: { binary_data_output: true },
      }, [ints(range16.map((v) => v * i)), ints(twos16)]);
      const r = await request(`${s.url}/v2/models/simple/infer`, { body, headers: { ...headers, 'X-Request-Id': id } });
      assert.equal(splitBinary(r).header.id, id);
      assert.deepEqual(output(r, 'OUTPUT1'), range16.map((v) => v * i - 2));
    }
  });

  test('the same header bytes to another model are checked against that model', async () => {
    // simple_identity has one input: the two-input header simple accepted is refused there by its bounds.
    await infer(['INPUT0', 'INPUT1'], [ints(range16), ints(twos16)]);
    const r = await infer(['INPUT0', 'INPUT1'], [ints(range16), ints(twos16)], 'simple_identity');
    assert.equal(r.status, 400);
    assert.equal(r.json().error, "expected 1 inputs but got 2 inputs for model 'simple_identity'");
  });
});
