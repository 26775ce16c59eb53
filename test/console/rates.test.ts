import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/paths.js';

// The traffic view's arithmetic (console/rates.js, a browser module with no DOM use), on two reads of the
// statistics extension made by hand.

const { rates } = (await import(pathToFileURL(join(ROOT, 'console', 'rates.js')).href)) as { rates: (a: unknown, b: unknown, secs: number) => Map<string, Record<string, any>> };

const d = (count: number, ns: number) => ({ count, ns });
function version(name: string, v: number, o: { ok: number; okNs: number; fail: number; queueNs: number; rows: number; execs: number; batches: [number, number][]; failures?: Record<string, number>; tokens?: number; first?: { count: number; sum: number }; q?: Record<string, number>; inflight?: number }) {
  return {
    name, version: String(v), inference_count: o.rows, execution_count: o.execs,
    inference_stats: { success: d(o.ok, o.okNs), fail: d(o.fail, 0), queue: d(o.ok, o.queueNs) },
    batch_stats: o.batches.map(([size, n]) => ({ batch_size: size, compute_infer: d(n, 0) })),
    nereid_failures: o.failures ?? {}, nereid_generated_tokens: o.tokens ?? 0, nereid_inflight_count: o.inflight ?? 0, nereid_pending_count: 0,
    ...(o.first ? { nereid_first_response_ms: o.first } : {}), ...(o.q ? { nereid_latency_quantiles_us: { request: o.q } } : {}),
  };
}

test('rates per version and for the server, over the interval between two reads', () => {
  const before = { model_stats: [
    version('a', 1, { ok: 10, okNs: 10e6, fail: 1, queueNs: 1e6, rows: 10, execs: 10, batches: [[1, 10]], failures: { REJECTED: 1, OTHER: 0 } }),
    version('llm', 1, { ok: 2, okNs: 0, fail: 0, queueNs: 0, rows: 2, execs: 2, batches: [], tokens: 100, first: { count: 2, sum: 40 } }),
  ] };
  const after = { model_stats: [
    version('a', 1, { ok: 30, okNs: 50e6, fail: 5, queueNs: 3e6, rows: 50, execs: 20, batches: [[1, 15], [4, 5]], failures: { REJECTED: 3, OTHER: 2 }, q: { '0.5': 1500, '0.99': 9000 }, inflight: 3 }),
    version('llm', 1, { ok: 4, okNs: 8e6, fail: 0, queueNs: 0, rows: 4, execs: 4, batches: [], tokens: 300, first: { count: 4, sum: 100 } }),
    version('new', 1, { ok: 7, okNs: 7e6, fail: 0, queueNs: 0, rows: 7, execs: 7, batches: [] }),
  ] };
  const r = rates(before, after, 2);
  const a = r.get('a:1')!;
  assert.deepEqual([a['success'], a['fail'], a['latencyMs'], a['queueMs'], a['batch']], [10, 2, 2, 0.1, 4]);
  assert.deepEqual([a['batches'], a['reasons'], a['p50Ms'], a['p99Ms'], a['inflight']], ['1×5, 4×5', 'REJECTED 2, OTHER 2', 1.5, 9, 3]);
  const llm = r.get('llm:1')!;
  assert.deepEqual([llm['tokens'], llm['ttftMs'], llm['p99Ms']], [100, 30, null]);
  assert.equal(r.has('new:1'), false, 'a version first seen has no rate yet');
  const all = r.get('')!;
  assert.deepEqual([all['success'], all['fail'], all['latencyMs'], all['p99Ms'], all['tokens'], all['inflight']], [11, 2, 48e6 / 22 / 1e6, 9, 100, 3]);
});
