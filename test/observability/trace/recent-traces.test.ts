import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RECENT_TRACE_CHARS, RECENT_TRACES, RecentTraces } from '../../../src/observability/trace/recent-traces.js';

test('the ring of recent traces: newest first, at most RECENT_TRACES, none longer than RECENT_TRACE_CHARS', () => {
  const r = new RecentTraces();
  assert.equal(r.json(), '{"traces":[]}');
  r.add('{"id":1}');
  r.add('{"id":2},{"id":3}');
  assert.deepEqual(JSON.parse(r.json()), { traces: [[{ id: 2 }, { id: 3 }], [{ id: 1 }]] });
  for (let i = 4; i < 4 + RECENT_TRACES; i++) r.add(`{"id":${i}}`);
  r.add(`{"id":0,"data":"${'x'.repeat(RECENT_TRACE_CHARS)}"}`);
  const traces = (JSON.parse(r.json()) as { traces: { id: number }[][] }).traces;
  assert.equal(traces.length, RECENT_TRACES);
  assert.deepEqual([traces[0]![0]!.id, traces.at(-1)![0]!.id], [3 + RECENT_TRACES, 4]);
});
