import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRoutes, WeightedRoutes } from '../../src/models/routing.js';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';

// Weighted routing, Nereid's extension in config `parameters`: nereid_version_weights splits requests that
// name no version between versions; a `router` model (nereid_routes) splits them between models; a
// `routing_key` request parameter (or a sequence id) makes the choice sticky.

describe('route lists and weighted picks', () => {
  test('parseRoutes reads target:weight lists and refuses anything else', () => {
    assert.deepEqual(parseRoutes(' 1:90, 2:10 ', 'p'), [{ target: '1', weight: 90 }, { target: '2', weight: 10 }]);
    assert.deepEqual(parseRoutes('llama_local:50,llama_vllm:50', 'p').map((r) => r.target), ['llama_local', 'llama_vllm']);
    for (const bad of ['', '1', '1:x', '1:-2', ':5', '1:0,2:0', '1:1,1:2']) assert.throws(() => parseRoutes(bad, 'p'), /parameter p/, bad);
  });

  test('random picks follow the weights; unusable targets are skipped', () => {
    const r = new WeightedRoutes(parseRoutes('a:90,b:10,c:0', 'p'));
    for (let i = 0; i < 20000; i++) r.pick(undefined, () => true);
    const a = r.counts.get('a')!;
    assert.ok(a > 17400 && a < 18600, `a got ${a} of 20000 (expected about 18000)`);
    assert.equal(r.counts.get('c'), 0, 'weight 0 gets nothing');
    assert.equal(r.pick(undefined, (t) => t !== 'a'), 'b');
    assert.equal(r.pick(undefined, () => false), undefined);
  });

  test('a routing key always lands on the same target, keys spread by weight, and only keys of a removed target move', () => {
    const r = new WeightedRoutes(parseRoutes('a:1,b:3', 'p'));
    const all = () => true;
    assert.equal(new Set(Array.from({ length: 20 }, () => r.pick('alice', all))).size, 1);
    const first = new Map<string, string>();
    for (let i = 0; i < 8000; i++) first.set(`user-${i}`, r.pick(`user-${i}`, all)!);
    const onB = [...first.values()].filter((t) => t === 'b').length;
    assert.ok(onB > 5700 && onB < 6300, `b got ${onB} of 8000 keys (expected about 6000)`);
    const three = new WeightedRoutes(parseRoutes('a:1,b:3,c:2', 'p'));
    let moved = 0;
    for (const [k, t] of first) {
      const now = three.pick(k, (x) => x !== 'c');
      if (now !== t) moved++;
    }
    assert.equal(moved, 0, 'with c unusable every key keeps its target');
  });
});

describe('through the server', () => {
  let repo: { dir: string; remove(): Promise<void> };
  let s: TestServer;
  before(async () => {
    repo = await tempRepository([
      { from: join(FIXTURES, 'versions', 'vmodel') },
      { from: join(EXAMPLES, 'simple'), name: 'simple_a' },
      { from: join(EXAMPLES, 'simple'), name: 'simple_b' },
      { from: join(EXAMPLES, 'simple_identity'), name: 'other_interface' },
      { from: join(EXAMPLES, 'repeat_int32'), name: 'repeat_a' },
      { from: join(EXAMPLES, 'repeat_int32'), name: 'repeat_b' },
    ]);
    for (const [m, from] of [['simple_a', 'simple'], ['simple_b', 'simple'], ['other_interface', 'simple_identity'], ['repeat_a', 'repeat_int32'], ['repeat_b', 'repeat_int32']]) {
      const p = join(repo.dir, m!, 'config.pbtxt');
      const { readFile } = await import('node:fs/promises');
      await writeFile(p, (await readFile(p, 'utf8')).replace(`name: "${from}"`, `name: "${m}"`));
    }
    await appendFile(join(repo.dir, 'vmodel', 'config.pbtxt'), `
version_policy { specific { versions: [ 1, 2, 3 ] } }
parameters { key: "nereid_version_weights" value { string_value: "1:75,2:25" } }
`);
    const router = async (name: string, routes: string, extra = '') => {
      await mkdir(join(repo.dir, name, '1'), { recursive: true });
      await writeFile(join(repo.dir, name, 'config.pbtxt'), `name: "${name}"
backend: "router"
parameters { key: "nereid_routes" value { string_value: "${routes}" } }
${extra}`);
    };
    await router('simple_ab', 'simple_a:1,simple_b:3');
    await router('repeat_ab', 'repeat_a:1,repeat_b:1');
    await router('mismatched', 'simple_a:1,other_interface:1');
    s = await startTestServer({ modelRepositories: [repo.dir], exitOnError: false, modelControlMode: 'explicit', loadModels: ['*'], metrics: { cpu: false } });
  });
  after(async () => {
    await s.close();
    await repo.remove();
  });

  const vinfer = (parameters?: Record<string, unknown>, version?: number) =>
    postJson(`${s.url}/v2/models/vmodel${version ? `/versions/${version}` : ''}/infer`, { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [100] }], ...(parameters ? { parameters } : {}) })
      .then((r) => { assert.equal(r.status, 200, r.body.toString()); return r.json(); });

  test('nereid_version_weights: requests naming no version are split by weight; naming one gets it', async () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const r = await vinfer();
      assert.equal(r.outputs[0].data[0], 100 + Number(r.model_version), 'the answer comes from the version the response names');
      seen.set(r.model_version, (seen.get(r.model_version) ?? 0) + 1);
    }
    assert.equal(seen.get('3'), undefined, 'version 3 has no weight');
    assert.ok(seen.get('1')! > 110 && seen.get('2')! > 20, `split ${JSON.stringify([...seen])}, expected about 150/50`);
    assert.equal((await vinfer(undefined, 3)).model_version, '3');
  });

  test('a routing_key (or a sequence id) keeps a client on one version', async () => {
    for (const key of ['alice', 'bob', 'carol', 'dave']) {
      const versions = new Set<string>();
      for (let i = 0; i < 10; i++) versions.add((await vinfer({ routing_key: key })).model_version);
      assert.equal(versions.size, 1, `${key} saw versions ${[...versions]}`);
    }
  });

  test('a router model answers with its targets\' interface and splits requests between them', async () => {
    const meta = (await request(`${s.url}/v2/models/simple_ab`)).json();
    assert.deepEqual(meta.inputs.map((i: any) => i.name), ['INPUT0', 'INPUT1']);
    const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(5) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }] };
    for (let i = 0; i < 80; i++) {
      const r = await postJson(`${s.url}/v2/models/simple_ab/infer`, body);
      assert.equal(r.status, 200, r.body.toString());
      assert.equal(r.json().model_name, 'simple_ab');
      assert.deepEqual(r.json().outputs[0].data, new Array(16).fill(7));
    }
    const count = async (m: string) => (await request(`${s.url}/v2/models/${m}/stats`)).json().model_stats[0].inference_stats.success.count as number;
    const [a, b] = [await count('simple_a'), await count('simple_b')];
    assert.equal(a + b, 80);
    assert.ok(b > a, `simple_b (weight 3) got ${b}, simple_a (weight 1) got ${a}`);
    assert.equal(await count('simple_ab'), 80);
    // Each target's share, in Nereid's routing metric.
    const text = await s.server.metricsText();
    assert.match(text, new RegExp(`^nereid_route_request_count\\{model="simple_ab",target="simple_a",version="1"\\} ${a}$`, 'm'));
    assert.match(text, new RegExp(`^nereid_route_request_count\\{model="simple_ab",target="simple_b",version="1"\\} ${b}$`, 'm'));
    assert.match(text, /^nereid_route_request_count\{model="vmodel",target="1",version="3"\} \d+$/m);
  });

  test('a router skips a target that is not ready; with none ready it is UNAVAILABLE', async () => {
    assert.equal((await postJson(`${s.url}/v2/repository/models/simple_b/unload`, {})).status, 200);
    const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }] };
    for (let i = 0; i < 5; i++) assert.equal((await postJson(`${s.url}/v2/models/simple_ab/infer`, body)).status, 200);
    assert.equal((await postJson(`${s.url}/v2/repository/models/simple_a/unload`, {})).status, 200);
    const r = await postJson(`${s.url}/v2/models/simple_ab/infer`, body);
    assert.equal(r.status, 503);
    assert.match(r.json().error, /none of its targets/);
    assert.equal((await postJson(`${s.url}/v2/repository/models/simple_a/load`, {})).status, 200);
    assert.equal((await postJson(`${s.url}/v2/repository/models/simple_b/load`, {})).status, 200);
    assert.equal((await postJson(`${s.url}/v2/models/simple_ab/infer`, body)).status, 200);
  });

  test('a router over decoupled targets streams their responses', async () => {
    const r = await postJson(`${s.url}/v2/models/repeat_ab/generate_stream`, { IN: [3, 4], DELAY: [0, 0], WAIT: 0, routing_key: 'k1' });
    assert.equal(r.status, 200);
    const events = r.body.toString().split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)));
    assert.deepEqual(events.map((e) => [e.model_name, e.OUT]), [['repeat_ab', 3], ['repeat_ab', 4]]);
  });

  test('targets whose interfaces differ keep the router from loading, with the difference named', async () => {
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    const m = index.find((e) => e.name === 'mismatched');
    assert.equal(m.state, 'UNAVAILABLE');
    assert.match(m.reason, /targets 'simple_a' and 'other_interface' differ/);
  });
});
