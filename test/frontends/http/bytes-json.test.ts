import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { binaryBody, request } from '../../helpers/http.js';
import { serializeBytes } from '../../../src/tensor/bytes.js';

// BYTES outputs written as JSON strings. A JSON string holds text, so an element that is not valid UTF-8
// cannot be written: the request fails with the words of Triton's JSON writer when it refuses a document,
// and the bytes are never altered (no U+FFFD in place of the bad ones, no byte-order mark dropped).
// An identity model answers the bytes a binary input carried.

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;

before(async () => {
  repo = await tempRepository([]);
  await mkdir(join(repo.dir, 'bytes_identity', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'bytes_identity', 'config.pbtxt'), `name: "bytes_identity"
backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
`);
  s = await startTestServer({ modelRepositories: [repo.dir] });
});
after(async () => {
  await s.close();
  await repo.remove();
});

/** Sends `elements` as a binary input and asks for OUTPUT0 as JSON. */
function echoAsJson(elements: Uint8Array[]) {
  const blob = serializeBytes(elements);
  const header = {
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, elements.length], parameters: { binary_data_size: blob.byteLength } }],
    outputs: [{ name: 'OUTPUT0', parameters: { binary_data: false } }],
  };
  const { body, headers } = binaryBody(header, [blob]);
  return request(`${s.url}/v2/models/bytes_identity/infer`, { body, headers });
}

const INVALID = 'Failed to accept document, invalid JSON.';

test('a BYTES output that is not UTF-8, asked for as JSON: an error in Triton\'s words, not replacement characters', async () => {
  const bad = Uint8Array.from([0x61, 0xff, 0xfe, 0x62]);
  const r = await echoAsJson([Buffer.from('fine'), bad]);
  assert.equal(r.status, 500, r.body.toString());
  assert.deepEqual(r.json(), { error: INVALID });
  // A lone continuation byte and a truncated sequence are not UTF-8 either.
  for (const b of [[0x80], [0xe2, 0x82]]) {
    const t = await echoAsJson([Uint8Array.from(b)]);
    assert.equal(t.status, 500, t.body.toString());
    assert.equal(t.json().error, INVALID);
  }
});

test('valid UTF-8 comes back as it was sent, a leading byte-order mark included', async () => {
  const elements = [Buffer.from('\u{FEFF}bom'), Buffer.from('héllo ✓ 𝄞'), Buffer.alloc(0)];
  const r = await echoAsJson(elements);
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].data, ['\u{FEFF}bom', 'héllo ✓ 𝄞', '']);
});

test('a large output, written off the event loop, is refused the same way', async () => {
  // Over the size at which the JSON writer moves to its worker thread.
  const elements = Array.from({ length: 2000 }, () => Buffer.from('x'.repeat(64)));
  elements[1999] = Buffer.from([0xc3, 0x28]);
  const r = await echoAsJson(elements);
  assert.equal(r.status, 500, r.body.toString());
  assert.deepEqual(r.json(), { error: INVALID });
  elements[1999] = Buffer.from('ok');
  const ok = await echoAsJson(elements);
  assert.equal(ok.status, 200);
  assert.equal(ok.json().outputs[0].data[1999], 'ok');
});
