import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';

// The model repository extension in explicit mode: index, load (with config and file overrides), unload.

let s: TestServer;
let repo: { dir: string; remove(): Promise<void> };
before(async () => {
  repo = await tempRepository([{ from: join(FIXTURES, 'versions', 'vmodel') }, { from: join(EXAMPLES, 'simple') }]);
  s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const vInput = { inputs: [{ name: 'INPUT0', shape: [1, 1], datatype: 'INT32', data: [10] }] };
const inferV = async (path = 'vmodel') => {
  const r = await postJson(`${s.url}/v2/models/${path}/infer`, vInput);
  return { status: r.status, body: r.json() };
};

describe('explicit model control', () => {
  test('nothing loads at start; the index lists the repository by name', async () => {
    const idx = (await request(`${s.url}/v2/repository/index`, { method: 'POST', body: '' })).json();
    assert.deepEqual(idx, [{ name: 'simple' }, { name: 'vmodel' }]);
    assert.equal((await inferV()).status, 400);
  });

  test('load serves the latest version; the index shows it READY', async () => {
    const r = await postJson(`${s.url}/v2/repository/models/vmodel/load`, {});
    assert.equal(r.status, 200, r.body.toString());
    const { status, body } = await inferV();
    assert.equal(status, 200);
    assert.equal(body.model_version, '3');
    assert.deepEqual(body.outputs[0].data, [13]);
    const idx = (await postJson(`${s.url}/v2/repository/index`, { ready: true })).json();
    // Nereid's nereid_memory_bytes: what the version's load took.
    assert.ok(Number.isSafeInteger(idx[0]?.nereid_memory_bytes), JSON.stringify(idx));
    assert.deepEqual(idx, [{ name: 'vmodel', version: '3', state: 'READY', nereid_memory_bytes: idx[0].nereid_memory_bytes }]);
  });

  test('a config override with version_policy all serves every version', async () => {
    const cfg = (await request(`${s.url}/v2/models/vmodel/config`)).json();
    cfg.version_policy = { all: {} };
    const r = await postJson(`${s.url}/v2/repository/models/vmodel/load`, { parameters: { config: JSON.stringify(cfg) } });
    assert.equal(r.status, 200, r.body.toString());
    for (const v of [1, 2, 3]) {
      const { status, body } = await inferV(`vmodel/versions/${v}`);
      assert.equal(status, 200);
      assert.deepEqual(body.outputs[0].data, [10 + v]);
    }
    const meta = (await request(`${s.url}/v2/models/vmodel`)).json();
    assert.deepEqual(meta.versions, ['1', '2', '3']);
  });

  test('a specific policy naming a missing version loads what exists', async () => {
    const cfg = (await request(`${s.url}/v2/models/vmodel/config`)).json();
    cfg.version_policy = { specific: { versions: [2, 9] } };
    assert.equal((await postJson(`${s.url}/v2/repository/models/vmodel/load`, { parameters: { config: JSON.stringify(cfg) } })).status, 200);
    assert.deepEqual((await request(`${s.url}/v2/models/vmodel`)).json().versions, ['2']);
    assert.equal((await inferV('vmodel/versions/3')).status >= 400, true);
  });

  test('unload makes the model unavailable and the index says why', async () => {
    assert.equal((await postJson(`${s.url}/v2/repository/models/vmodel/unload`, { parameters: { unload_dependents: false } })).status, 200);
    const { status, body } = await inferV();
    assert.ok(status >= 400);
    assert.match(body.error, /vmodel/);
    const idx = (await request(`${s.url}/v2/repository/index`, { method: 'POST', body: '' })).json();
    assert.ok(idx.some((e: any) => e.name === 'vmodel' && e.state === 'UNAVAILABLE' && e.reason === 'unloaded'));
    assert.equal((await request(`${s.url}/v2/models/vmodel/ready`)).status, 400);
  });

  test('file overrides build the model in a temporary folder, not in the repository', async () => {
    const onnx = await readFile(join(FIXTURES, 'versions', 'vmodel', '2', 'model.onnx'));
    const cfg = { name: 'fresh', backend: 'onnxruntime', max_batch_size: 8,
      // The model's output dim is variable, and an ONNX output's dims must match the model's exactly.
      input: [{ name: 'INPUT0', data_type: 'TYPE_INT32', dims: [1] }], output: [{ name: 'OUTPUT0', data_type: 'TYPE_INT32', dims: [-1] }] };
    const r = await postJson(`${s.url}/v2/repository/models/fresh/load`, { parameters: { config: JSON.stringify(cfg), 'file:1/model.onnx': onnx.toString('base64') } });
    assert.equal(r.status, 200, r.body.toString());
    const { status, body } = await inferV('fresh');
    assert.equal(status, 200);
    assert.deepEqual(body.outputs[0].data, [12]);
    // A leading slash names the model folder, as in Triton's own load tests (`file:/1/model.py`).
    const slash = await postJson(`${s.url}/v2/repository/models/fresh/load`, { parameters: { config: JSON.stringify(cfg), 'file:/1/model.onnx': onnx.toString('base64') } });
    assert.equal(slash.status, 200, slash.body.toString());
    assert.equal((await inferV('fresh')).status, 200);
    assert.deepEqual(readdirSync(repo.dir).sort(), ['simple', 'vmodel']);
  });

  test('names and file paths that try to leave the repository are refused', async () => {
    const cfg = JSON.stringify({ backend: 'onnxruntime' });
    // Override folders are made as nereid-model-*; other work on the machine may make temporary files meanwhile.
    const overrideFolders = (): Set<string> => new Set(readdirSync(tmpdir()).filter((f) => f.startsWith('nereid-model-')));
    const before = overrideFolders();
    for (const path of ['../../escape.onnx', '/../escape.onnx', '//../../x.onnx', '1/../../x.onnx', '/']) {
      const r = await postJson(`${s.url}/v2/repository/models/esc/load`, { parameters: { config: cfg, [`file:${path}`]: 'AAAA' } });
      assert.equal(r.status, 400, path);
      assert.match(r.json().error, /invalid file override path/);
    }
    assert.ok(!existsSync(join(tmpdir(), 'escape.onnx')));
    // None left behind by these loads (another test's loads may come and go meanwhile).
    for (const f of overrideFolders()) assert.ok(before.has(f) || !existsSync(join(tmpdir(), f, 'esc')), `left behind: ${f}`);
    for (const name of ['..', '%2E%2E', '..%2F..%2Fetc']) {
      const r = await postJson(`${s.url}/v2/repository/models/${name}/load`, {});
      assert.ok(r.status === 400 || r.status === 404, `${name}: ${r.status}`);
    }
    const r = await postJson(`${s.url}/v2/repository/models/fresh/load`, { parameters: { 'file:1/model.onnx': 'AAAA' } });
    assert.equal(r.status, 400);
    assert.match(r.json().error, /config must be provided/);
    const r2 = await postJson(`${s.url}/v2/repository/models/fresh/load`, { parameters: { other: 'x' } });
    assert.equal(r2.status, 400);
  });

  test('unloading a name never loaded succeeds and changes nothing, as in Triton', async () => {
    for (const name of ['not_in_any_repository', 'vmodel_never']) {
      const r = await postJson(`${s.url}/v2/repository/models/${name}/unload`, {});
      assert.equal(r.status, 200, r.body.toString());
    }
  });

  test('a model that fails to load reports why, and the others keep serving', async () => {
    const r = await postJson(`${s.url}/v2/repository/models/missing/load`, {});
    assert.equal(r.status, 400);
    assert.match(r.json().error, /failed to load 'missing'/);
    assert.equal((await postJson(`${s.url}/v2/repository/models/simple/load`, {})).status, 200);
    assert.equal((await request(`${s.url}/v2/models/simple/ready`)).status, 200);
  });
});
