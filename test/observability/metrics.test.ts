import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundHistogram } from '../../src/observability/metrics/histogram.js';
import { AGE_BUCKETS, BoundSummary } from '../../src/observability/metrics/summary.js';
import { DEFAULT_QUANTILES, parseMetricsConfig } from '../../src/observability/metrics/settings.js';

test('--metrics-config: Triton\'s literals, later entries win, bad quantile pairs skipped', () => {
  const d = parseMetricsConfig([]);
  assert.deepEqual([d.counterLatencies, d.histogramLatencies, d.summaryLatencies], [true, false, false]);
  assert.deepEqual(d.summaryQuantiles, DEFAULT_QUANTILES);
  const s = parseMetricsConfig(['counter_latencies=0', 'histogram_latencies=TRUE', 'summary_latencies=true', 'unknown=1']);
  assert.equal(s.counterLatencies, true, 'only the literal false disables counters');
  assert.equal(s.histogramLatencies, false, 'only the literal true enables histograms');
  assert.equal(s.summaryLatencies, true);
  assert.equal(parseMetricsConfig(['counter_latencies=false']).counterLatencies, false);
  const warnings: string[] = [];
  const q = parseMetricsConfig(['summary_quantiles=0.5:0.05,oops,0.9:0.01,2:0.1'], (w) => warnings.push(w));
  assert.deepEqual(q.summaryQuantiles, [{ quantile: 0.5, error: 0.05 }, { quantile: 0.9, error: 0.01 }]);
  assert.equal(warnings.length, 2);
  assert.deepEqual(parseMetricsConfig(['summary_quantiles=nonsense'], () => undefined).summaryQuantiles, DEFAULT_QUANTILES);
});

test('histogram: cumulative buckets with +Inf, sum and count', () => {
  const h = new BoundHistogram([100, 500, 2000, 5000]);
  for (const v of [1, 100, 100.5, 600, 9000]) h.observe(v);
  assert.deepEqual(h.cumulative(), [2, 3, 4, 4, 5]);
  assert.equal(h.count, 5);
  assert.equal(h.sum, 9801.5);
});

test('summary: quantiles within 1% of the exact ones; the window forgets what is older than its age buckets', () => {
  const s = new BoundSummary([0, 0.5, 0.9, 0.99, 1]);
  assert.ok(s.values().every(Number.isNaN), 'an empty window reports NaN');
  const values: number[] = [];
  let x = 7;
  for (let i = 0; i < 10_000; i++) {
    x = (x * 48271) % 2147483647;
    values.push(x % 5 === 0 ? 0 : 1 + (x % 100_000));
  }
  for (const v of values) s.observe(v);
  const sorted = [...values].sort((a, b) => a - b);
  const got = s.values();
  [0, 0.5, 0.9, 0.99, 1].forEach((q, i) => {
    const exact = sorted[Math.floor(q * (sorted.length - 1))]!;
    assert.ok(Math.abs(got[i]! - exact) <= Math.max(1, exact * 0.011), `q${q}: ${got[i]} vs ${exact}`);
  });
  assert.equal(s.count, 10_000);
  assert.equal(s.sum, values.reduce((a, b) => a + b, 0));
  for (let i = 0; i < AGE_BUCKETS - 1; i++) s.rotate();
  assert.ok(!Number.isNaN(s.values()[1]!), 'still inside the window');
  s.rotate();
  s.observe(42);
  assert.deepEqual(s.values(), [42, 42, 42, 42, 42], 'older observations have aged out');
  assert.equal(s.count, 10_001, 'count and sum are since load');
});
