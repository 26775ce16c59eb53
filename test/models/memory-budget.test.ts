import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { postJson, request } from '../helpers/http.js';
import type { ServerProcess } from '../helpers/server.js';
import { until } from '../helpers/until.js';
import { MIB, infer, loaded, repository, sample, serve, stop, type Model } from '../helpers/memory-models.js';

// --model-memory-budget with --model-load-on-demand, through `nereid serve` as a client sees it. The models are
// copies of memory/ballast, which hold a known number of MiB while loaded and answer OUT = IN after IN ms; their
// measured sizes come within a few MiB of it, and every budget below leaves that much room either way.

describe('a budget for four 40 MiB models: least recently used idle models go first, pinned and busy ones stay', () => {
  let repo: { dir: string; remove(): Promise<void> };
  let s: { p: ServerProcess; metrics: () => Promise<string> };
  const BUDGET = 200 * MIB;

  before(async () => {
    const models: Model[] = ['keep', 'b1', 'b2', 'b3', 'b4'].map((name) => ({ name, mb: 40 }));
    models.push({ name: 'b5', mb: 40, params: { nereid_pinned: 'true' } });
    repo = await repository(models);
    s = await serve(repo.dir, ['--model-control-mode=explicit', '--load-model=keep', `--model-memory-budget=${BUDGET / MIB}M`]);
  });
  after(async () => {
    await stop(s?.p);
    await repo?.remove();
  });

  test('nothing but --load-model at start; each model named loads once, and the loaded ones stay within the budget', async () => {
    assert.deepEqual([...(await loaded(s.p.url)).keys()], ['keep']);
    for (const m of ['b5', 'b1', 'b2']) {
      const r = await infer(s.p.url, m, 1);
      assert.equal(r.status, 200, r.body.toString());
      assert.deepEqual(r.json().outputs[0].data, [1]);
    }
    const now = await loaded(s.p.url);
    assert.deepEqual([...now.keys()].sort(), ['b1', 'b2', 'b5', 'keep']);
    for (const [name, bytes] of now) if (name !== 'keep') assert.ok(bytes > 36 * MIB && bytes < 48 * MIB, `${name}: ${bytes} bytes measured`);
    // A fifth model: b5 is the oldest, but pinned by its config; keep is pinned by --load-model; b1 goes.
    assert.equal((await infer(s.p.url, 'b3')).status, 200);
    const after3 = await loaded(s.p.url);
    assert.deepEqual([...after3.keys()].sort(), ['b2', 'b3', 'b5', 'keep']);
    assert.ok([...after3.values()].reduce((a, b) => a + b, 0) <= BUDGET);
    const idx = (await postJson(`${s.p.url}/v2/repository/index`, {})).json() as { name: string; state?: string; reason?: string }[];
    assert.match(idx.find((e) => e.name === 'b1')!.reason ?? '', /evicted/);
    assert.match(s.p.output(), /evicting 'b1' \(\d+ bytes, least recently used\) to make room for 'b3'/);
  });

  test('a model with a request in flight is not evicted: the next least recently used idle one goes', async () => {
    // b2 is now the least recently used; a 2.5 s request keeps it busy while b4 loads.
    const slow = infer(s.p.url, 'b2', 2500);
    await until(async () => sample(await s.metrics(), 'nereid_inference_inflight_request_count', 'b2') === 1, 'the slow request in flight');
    assert.equal((await infer(s.p.url, 'b4')).status, 200);
    assert.deepEqual([...(await loaded(s.p.url)).keys()].sort(), ['b2', 'b4', 'b5', 'keep']);
    const r = await slow;
    assert.equal(r.status, 200);
    assert.deepEqual(r.json().outputs[0].data, [2500]);
  });

  test('an evicted model loads again on its next request; counted in the metrics', async () => {
    assert.equal((await infer(s.p.url, 'b1', 3)).status, 200);
    const text = await s.metrics();
    assert.equal(sample(text, 'nereid_model_load_on_demand_count', 'b1'), 2);
    assert.equal(sample(text, 'nereid_model_load_on_demand_count', 'keep'), 0);
    assert.equal(sample(text, 'nereid_model_eviction_count', 'b1'), 1);
    assert.equal(sample(text, 'nereid_model_eviction_count', 'b3'), 1);
    assert.equal(sample(text, 'nereid_model_eviction_count', 'b5'), 0);
    assert.ok(sample(text, 'nereid_model_memory_bytes', 'b1') > 36 * MIB);
    // Statistics carry Triton's memory_usage.
    const stats = (await request(`${s.p.url}/v2/models/b1/stats`)).json().model_stats[0];
    assert.equal(stats.memory_usage[0].type, 'CPU');
    assert.equal(stats.memory_usage[0].byte_size, sample(text, 'nereid_model_memory_bytes', 'b1'));
  });
});

describe('too large, idle unload, and churn with sequences and ensembles', () => {
  let repo: { dir: string; remove(): Promise<void> };
  let s: { p: ServerProcess; metrics: () => Promise<string> };
  const BUDGET = 100 * MIB;
  const CHURN = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];

  before(async () => {
    repo = await repository([
      { name: 'huge', mb: 120 },
      { name: 'napper', mb: 1, params: { nereid_idle_unload_secs: '1' } },
      ...CHURN.map((name) => ({ name, mb: 20 })),
    ], { sequence: true, ensemble: 'c1' });
    s = await serve(repo.dir, ['--model-control-mode=none', `--model-memory-budget=${BUDGET / MIB}M`, '--log-verbose=0']);
  });
  after(async () => {
    await stop(s?.p);
    await repo?.remove();
  });

  test('a model larger than the budget fails its load naming both sizes, leaves nothing loaded, and is not tried again at once', async () => {
    const r = await infer(s.p.url, 'huge');
    assert.equal(r.status, 400, r.body.toString());
    assert.match(r.json().error, /failed to load 'huge'.*it takes \d+ bytes, more than the model memory budget of 104857600 bytes/);
    const again = await infer(s.p.url, 'huge');
    assert.equal(again.json().error, r.json().error);
    assert.equal(s.p.output().match(/loading: huge:1/g)?.length, 1);
    assert.ok(!(await loaded(s.p.url)).has('huge'));
  });

  test('nereid_idle_unload_secs unloads a model idle that long; it loads again when asked', async () => {
    assert.equal((await infer(s.p.url, 'napper')).status, 200);
    // The reason is set once the unload is over; the model leaves the ready list as it begins.
    const reason = async (): Promise<string> => {
      const idx = (await postJson(`${s.p.url}/v2/repository/index`, {})).json() as { name: string; state?: string; reason?: string }[];
      const e = idx.find((x) => x.name === 'napper')!;
      return e.state === 'UNAVAILABLE' ? e.reason ?? '' : '';
    };
    await until(async () => (await reason()) !== '', 'napper to be unloaded once idle');
    assert.match(await reason(), /idle for 1 s/);
    assert.equal((await infer(s.p.url, 'napper')).status, 200);
  });

  test('many clients over more models than fit: every request answered right; a live sequence and a used ensemble step stay', async () => {
    const seq = (v: number, flags: Record<string, unknown>) => postJson(`${s.p.url}/v2/models/sequence_accumulator/infer`, {
      inputs: [{ name: 'INPUT', shape: [1, 1], datatype: 'INT32', data: [v] }], parameters: { sequence_id: 77, ...flags },
    });
    assert.equal((await seq(5, { sequence_start: true })).status, 200);
    // Each client walks all the models from its own starting point: the set of models used must not depend on
    // how the clients' requests interleave (a shared random sequence drawn in arrival order sometimes left half of
    // them out, and then nothing had to be evicted).
    const failures: string[] = [];
    const client = async (c: number): Promise<void> => {
      for (let i = 0; i < 15; i++) {
        const model = i % 5 === 0 ? 'pipe' : CHURN[(c + i) % CHURN.length]!;
        const ms = (c * 7 + i * 3) % 10;
        const r = await infer(s.p.url, model, ms);
        if (r.status !== 200 || r.json().outputs[0].data[0] !== ms) failures.push(`${model}: ${r.status} ${r.body.toString()}`);
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, c) => client(c)));
    const text = await s.metrics();
    assert.deepEqual(failures, []);
    assert.ok(CHURN.reduce((n, m) => n + sample(text, 'nereid_model_eviction_count', m), 0) > 0, 'some model was evicted');
    assert.equal(sample(text, 'nereid_model_eviction_count', 'sequence_accumulator'), 0);
    const end = await seq(6, { sequence_end: true });
    assert.equal(end.status, 200, end.body.toString());
    assert.deepEqual(end.json().outputs[0].data, [11]);
    assert.ok([...(await loaded(s.p.url)).values()].reduce((a, b) => a + b, 0) <= BUDGET);
  });
});
