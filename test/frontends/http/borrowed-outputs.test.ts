import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { releaseWhenDone } from '../../../src/frontends/http/reply.js';
import { forWorker } from '../../../src/frontends/http/json-parse.js';
import type { InferenceResponse, Tensor } from '../../../src/index.js';

// How the HTTP frontend gives borrowed outputs back and hands them to its JSON worker. The end-to-end paths
// (Python models over HTTP) are in test/backends/python/borrow.test.ts.

function counter(): { release: () => void; count: () => number } {
  let n = 0;
  return { release: () => void n++, count: () => n };
}

test('releaseWhenDone: once when the response closes, and the connection keeps no listener', () => {
  const res = new EventEmitter();
  const connection = new AbortController();
  const r = counter();
  releaseWhenDone(res as unknown as ServerResponse, connection.signal, r.release);
  assert.equal(r.count(), 0);
  res.emit('close');
  assert.equal(r.count(), 1);
  connection.abort(); // a later request on the same connection ends it: nothing more for this one
  assert.equal(r.count(), 1);
});

test('releaseWhenDone: a response queued behind another gets no close of its own; the connection ending releases it', () => {
  const res = new EventEmitter();
  const connection = new AbortController();
  const r = counter();
  releaseWhenDone(res as unknown as ServerResponse, connection.signal, r.release);
  connection.abort();
  assert.equal(r.count(), 1);
});

test('releaseWhenDone: a connection already gone releases at once', () => {
  const connection = new AbortController();
  connection.abort();
  const r = counter();
  releaseWhenDone(new EventEmitter() as unknown as ServerResponse, connection.signal, r.release);
  assert.equal(r.count(), 1);
});

test('forWorker: no release(), and outputs viewing part of a larger buffer become copies of just their bytes', () => {
  const region = new Uint8Array(1 << 20);
  region.set([1, 2, 3, 4, 5, 6, 7, 8], 4096);
  const lent: Tensor = { name: 'A', datatype: 'UINT8', shape: [8], data: region.subarray(4096, 4104) };
  const own: Tensor = { name: 'B', datatype: 'UINT8', shape: [2], data: new Uint8Array([9, 9]) };
  const text: Tensor = { name: 'C', datatype: 'BYTES', shape: [2], data: [region.subarray(4096, 4099), region.subarray(4100, 4102)] };
  const response: InferenceResponse = { model: 'm', version: 1, id: '', outputs: [lent, own, text], release: () => undefined };
  const plain = forWorker(response);
  assert.equal('release' in plain, false);
  // structuredClone is what postMessage does: the clone of a view carries its whole buffer.
  const [a, b, c] = structuredClone(plain).outputs;
  assert.deepEqual([...(a!.data as Uint8Array)], [1, 2, 3, 4, 5, 6, 7, 8]);
  assert.equal((a!.data as Uint8Array).buffer.byteLength, 8);
  assert.equal(plain.outputs[1], own, 'an output that is its whole buffer is passed as it is');
  assert.deepEqual((b!.data as Uint8Array).buffer.byteLength, 2);
  assert.deepEqual((c!.data as Uint8Array[]).map((e) => [...e]), [[1, 2, 3], [5, 6]]);
  assert.ok((c!.data as Uint8Array[])[0]!.buffer.byteLength <= 5 + 8);
});
