// Rates from two reads of the statistics extension: per model version ("name:version") and for the whole
// server (""), over `secs` seconds.

const d = (a, b, key) => (b?.[key]?.count ?? 0) - (a?.[key]?.count ?? 0);
const dns = (a, b, key) => (b?.[key]?.ns ?? 0) - (a?.[key]?.ns ?? 0);
const ms = (ns, n) => (n > 0 ? ns / n / 1e6 : null);

function one(a, b, secs) {
  const ia = a?.inference_stats;
  const ib = b.inference_stats;
  const ok = d(ia, ib, 'success');
  const fail = d(ia, ib, 'fail');
  const queued = d(ia, ib, 'queue');
  const executions = (b.execution_count ?? 0) - (a?.execution_count ?? 0);
  const rows = (b.inference_count ?? 0) - (a?.inference_count ?? 0);
  const q = b.nereid_latency_quantiles_us?.request ?? {};
  const ttft = { n: (b.nereid_first_response_ms?.count ?? 0) - (a?.nereid_first_response_ms?.count ?? 0), sum: (b.nereid_first_response_ms?.sum ?? 0) - (a?.nereid_first_response_ms?.sum ?? 0) };
  return {
    success: ok / secs, fail: fail / secs,
    okCount: ok, okNs: dns(ia, ib, 'success'), queueCount: queued, queueNs: dns(ia, ib, 'queue'), executions, rows,
    latencyMs: ms(dns(ia, ib, 'success'), ok), queueMs: ms(dns(ia, ib, 'queue'), queued),
    p50Ms: q['0.5'] === undefined ? null : q['0.5'] / 1000, p99Ms: q['0.99'] === undefined ? null : q['0.99'] / 1000,
    inflight: b.nereid_inflight_count ?? 0, pending: b.nereid_pending_count ?? 0,
    batch: executions > 0 ? rows / executions : null,
    batches: batchSizes(a?.batch_stats, b.batch_stats),
    reasons: reasons(a?.nereid_failures, b.nereid_failures),
    tokens: ((b.nereid_generated_tokens ?? 0) - (a?.nereid_generated_tokens ?? 0)) / secs,
    ttftMs: ttft.n > 0 ? ttft.sum / ttft.n : null,
  };
}

function batchSizes(a, b) {
  const before = new Map((a ?? []).map((x) => [x.batch_size, x.compute_infer.count]));
  return (b ?? []).map((x) => [x.batch_size, x.compute_infer.count - (before.get(x.batch_size) ?? 0)])
    .filter(([, n]) => n > 0).map(([size, n]) => `${size}×${n}`).join(', ');
}

function reasons(a, b) {
  return Object.entries(b ?? {}).map(([k, v]) => [k, v - (a?.[k] ?? 0)]).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(', ');
}

/** The server's line: sums of the versions' counts, means weighted by them, the highest p50 and p99. */
function total(list, secs) {
  const sum = (f) => list.reduce((s, r) => s + (f(r) ?? 0), 0);
  const most = (f) => list.reduce((m, r) => (f(r) === null || (m !== null && m >= f(r)) ? m : f(r)), null);
  const okCount = sum((r) => r.okCount);
  const queueCount = sum((r) => r.queueCount);
  const executions = sum((r) => r.executions);
  return {
    success: sum((r) => r.success), fail: sum((r) => r.fail),
    latencyMs: ms(sum((r) => r.okNs), okCount), queueMs: ms(sum((r) => r.queueNs), queueCount),
    p50Ms: most((r) => r.p50Ms), p99Ms: most((r) => r.p99Ms),
    inflight: sum((r) => r.inflight), pending: sum((r) => r.pending),
    batch: executions > 0 ? sum((r) => r.rows) / executions : null,
    tokens: sum((r) => r.tokens), ttftMs: null, batches: '', reasons: '', secs,
  };
}

export function rates(before, after, secs) {
  const old = new Map((before.model_stats ?? []).map((m) => [`${m.name}:${m.version}`, m]));
  const out = new Map();
  for (const m of after.model_stats ?? []) {
    const key = `${m.name}:${m.version}`;
    // A version first seen now (just loaded) has no rate yet: its counts since load are not this interval's.
    if (old.has(key)) out.set(key, one(old.get(key), m, secs));
  }
  out.set('', total([...out.values()], secs));
  return out;
}
