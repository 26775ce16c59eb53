import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { request } from '../../helpers/http.js';
import { OFF_THREAD_BYTES } from '../../../src/frontends/http/json-parse.js';

// INT64 and UINT64 data in JSON bodies, read exactly over their whole range as Triton reads them (JSON.parse
// alone would round every integer past 2^53), through identity models so that what went in comes back.

let s: TestServer;
before(async () => {
  s = await startTestServer({ modelRepositories: [join(FIXTURES, 'dtypes')] });
});
after(() => s.close());

/** The request body as text: bigints written as integer literals, which JSON.stringify cannot do. */
function body(datatype: string, values: readonly (bigint | number | string)[], extra = ''): string {
  return `{"inputs":[{"name":"INPUT0","shape":[1,${values.length}],"datatype":"${datatype}","data":[${values.join(',')}]}]${extra}}`;
}

/** The literals of OUTPUT0's data in a JSON answer, exactly as written. */
function outputLiterals(text: string): string[] {
  const m = /"data":\[([^\]]*)\]/.exec(text);
  assert.ok(m, text);
  return m[1]!.split(',');
}

const infer = (model: string, text: string) => request(`${s.url}/v2/models/${model}/infer`, { body: text, headers: { 'Content-Type': 'application/json' } });

const INT64 = [-(2n ** 63n), -(2n ** 53n) - 1n, 9007199254740993n, 2n ** 63n - 1n, 5n];
const UINT64 = [2n ** 64n - 1n, 2n ** 63n, 9007199254740993n, 0n];

test('INT64 and UINT64 JSON data past 2^53 are read exactly', async () => {
  const a = await infer('identity_int64', body('INT64', INT64));
  assert.equal(a.status, 200, a.body.toString());
  assert.deepEqual(outputLiterals(a.body.toString()), INT64.map(String));
  const b = await infer('identity_uint64', body('UINT64', UINT64));
  assert.equal(b.status, 200, b.body.toString());
  assert.deepEqual(outputLiterals(b.body.toString()), UINT64.map(String));
});

test('exactly in a body large enough for the JSON worker too, nested data and a big sequence id or parameter beside them', async () => {
  const count = Math.ceil(OFF_THREAD_BYTES / 20) + 1;
  const values = Array.from({ length: count }, (_, i) => 2n ** 62n + BigInt(i));
  const big = await infer('identity_int64', body('INT64', values));
  assert.equal(big.status, 200, big.body.toString().slice(0, 200));
  const out = outputLiterals(big.body.toString());
  assert.equal(out.length, count);
  assert.equal(out[count - 1], String(values[count - 1]));
  const nested = `{"inputs":[{"name":"INPUT0","shape":[1,2],"datatype":"UINT64","data":[[18446744073709551615,9007199254740993]]}],"parameters":{"big":12345678901234567890}}`;
  const n = await infer('identity_uint64', nested);
  assert.equal(n.status, 200, n.body.toString());
  assert.deepEqual(outputLiterals(n.body.toString()), ['18446744073709551615', '9007199254740993']);
});

test('values out of the type\'s range, or past 2^53 as a fraction or an exponent, are still refused', async () => {
  const cases: [string, string, string][] = [
    ['identity_int64', 'INT64', String(2n ** 63n)],
    ['identity_int64', 'INT64', String(-(2n ** 63n) - 1n)],
    ['identity_uint64', 'UINT64', String(2n ** 64n)],
    ['identity_uint64', 'UINT64', '-1'],
    ['identity_int64', 'INT64', '1e19'],
    ['identity_int64', 'INT64', '9007199254740993.0'],
    ['identity_int64', 'INT64', '1.5'],
  ];
  for (const [model, dt, literal] of cases) {
    const r = await infer(model, body(dt, [literal]));
    assert.equal(r.status, 400, `${dt} ${literal}: ${r.body.toString()}`);
    assert.match(r.json().error, new RegExp(`^Unable to parse 'data': .* is not a valid ${dt} value for input 'INPUT0'$`));
  }
  // The server keeps serving.
  assert.equal((await infer('identity_int64', body('INT64', [1n]))).status, 200);
});

const generate = (model: string, text: string) => request(`${s.url}/v2/models/${model}/generate`, { body: text, headers: { 'Content-Type': 'application/json' } });

test('generate reads INT64 and UINT64 inputs past 2^53 exactly too, inline and in the JSON worker', async () => {
  const a = await generate('identity_int64', `{"INPUT0":[${INT64.join(',')}]}`);
  assert.equal(a.status, 200, a.body.toString());
  assert.deepEqual(/"OUTPUT0":\[([^\]]*)\]/.exec(a.body.toString())?.[1]?.split(','), INT64.map(String));
  const b = await generate('identity_uint64', `{"INPUT0":[${UINT64.join(',')}]}`);
  assert.equal(b.status, 200, b.body.toString());
  assert.deepEqual(/"OUTPUT0":\[([^\]]*)\]/.exec(b.body.toString())?.[1]?.split(','), UINT64.map(String));
  // Past the size that goes to the worker: the padding parameter makes the body large, not the data.
  const pad = 'x'.repeat(OFF_THREAD_BYTES);
  const c = await generate('identity_uint64', `{"INPUT0":[18446744073709551615],"pad":"${pad}"}`);
  assert.equal(c.status, 200, c.body.toString().slice(0, 200));
  assert.match(c.body.toString(), /"OUTPUT0":18446744073709551615\b/);
  // Out of range still refused.
  assert.equal((await generate('identity_uint64', `{"INPUT0":[18446744073709551616]}`)).status, 400);
});

test('a body parsed exactly for one 64-bit value still takes big integers in floating-point data', async () => {
  // The sequence id past 2^53 makes the whole header parse exactly; FP64 data written as a long integer then
  // arrives as a bigint and is still a valid FP64 value.
  const text = `{"inputs":[{"name":"INPUT0","shape":[1,1],"datatype":"FP64","data":[12345678901234567]}],"parameters":{"sequence_id":9007199254740993}}`;
  const r = await infer('identity_fp64', text);
  assert.equal(r.status, 200, r.body.toString());
  assert.equal(Number(outputLiterals(r.body.toString())[0]), 12345678901234567);
});
