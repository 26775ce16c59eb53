import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES } from '../helpers/paths.js';
import { postJson, request } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A repository of thousands of models in explicit mode (and in mode none loading on demand) is listed from its folder names alone: no model's
// config or version folders are read until it loads. Model folders and version folders may be symlinks to
// folders, as Triton tells folders by stat(), which follows links. 4,999 of the 5,000 configs do not parse,
// so an index row with a reason would show that a config was read.

const MODELS = 5000;
const GOOD = 'm02500';
const names = Array.from({ length: MODELS }, (_, i) => `m${String(i).padStart(5, '0')}`);
/** Even models are folders of their own, odd ones links to one shared folder. */
const linked = (i: number): boolean => i % 2 === 1;

let s: TestServer;
let tmp: string;

/** Runs `fn` on every item, a few hundred at once, so that no file-descriptor limit is met. */
async function inChunks<T>(items: readonly T[], fn: (item: T, i: number) => Promise<unknown>): Promise<void> {
  for (let at = 0; at < items.length; at += 500) await Promise.all(items.slice(at, at + 500).map((x, k) => fn(x, at + k)));
}

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'nereid-listing-'));
  const repo = join(tmp, 'repository');
  const shared = join(tmp, 'shared-bad');
  const goodVersion = join(tmp, 'good-version');
  await Promise.all([mkdir(repo), mkdir(join(shared, '1'), { recursive: true }), mkdir(goodVersion)]);
  await writeFile(join(shared, 'config.pbtxt'), 'this is { not a config');
  await copyFile(join(EXAMPLES, 'simple', '1', 'model.onnx'), join(goodVersion, 'model.onnx'));
  const config = (await readFile(join(EXAMPLES, 'simple', 'config.pbtxt'), 'utf8')).replace('name: "simple"', `name: "${GOOD}"`);
  await inChunks(names, async (name, i) => {
    const dir = join(repo, name);
    if (name === GOOD) {
      await mkdir(dir);
      await writeFile(join(dir, 'config.pbtxt'), config);
      return symlink(goodVersion, join(dir, '1'));
    }
    if (linked(i)) return symlink(shared, dir);
    await mkdir(dir);
    return writeFile(join(dir, 'config.pbtxt'), `not { a config of ${name}`);
  });
  // Neither a link to a file nor a link that leads nowhere is a model folder.
  await writeFile(join(tmp, 'a-file'), '');
  await Promise.all([symlink(join(tmp, 'a-file'), join(repo, 'link-to-file')), symlink(join(tmp, 'gone'), join(repo, 'dangling'))]);
  s = await startTestServer({ modelRepositories: [repo], modelControlMode: 'explicit' });
});

after(async () => {
  await s?.close();
  await rm(tmp, { recursive: true, force: true });
});

const index = async (body: object = {}): Promise<{ name: string; version?: string; state?: string; reason?: string }[]> => {
  const r = await postJson(`${s.url}/v2/repository/index`, body);
  assert.equal(r.status, 200, r.body.toString());
  return r.json();
};

describe('a repository of 5,000 models in explicit mode', () => {
  test('the index lists every model folder, linked ones too, by name alone: no config was read', async () => {
    const idx = await index();
    assert.equal(idx.length, MODELS);
    assert.deepEqual(idx.map((e) => e.name), names);
    assert.deepEqual(idx.filter((e) => Object.keys(e).length !== 1), []);
    assert.deepEqual(await index({ ready: true }), []);
  });

  test('the one good model loads from its linked version folder and its row becomes READY', async () => {
    const r = await postJson(`${s.url}/v2/repository/models/${GOOD}/load`, {});
    assert.equal(r.status, 200, r.body.toString());
    const ready = await index({ ready: true });
    // Beside Triton's fields, what the load took (nereid_memory_bytes).
    const ready1 = { name: GOOD, version: '1', state: 'READY', nereid_memory_bytes: (ready[0] as { nereid_memory_bytes?: number } | undefined)?.nereid_memory_bytes };
    assert.equal(typeof ready1.nereid_memory_bytes, 'number');
    assert.deepEqual(ready, [ready1]);
    const idx = await index();
    assert.equal(idx.length, MODELS);
    assert.deepEqual(idx.filter((e) => e.state !== undefined), [ready1]);
    const input = { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) };
    const infer = await postJson(`${s.url}/v2/models/${GOOD}/infer`, { inputs: [input, { ...input, name: 'INPUT1' }] });
    assert.equal(infer.status, 200, infer.body.toString());
  });

  test('a bad model, in its own folder or a linked one, fails its load and the index gives its reason', async () => {
    for (const name of [names[0]!, names[1]!]) {
      const r = await postJson(`${s.url}/v2/repository/models/${name}/load`, {});
      assert.equal(r.status, 400, r.body.toString());
      const row = (await index()).find((e) => e.name === name)!;
      assert.equal(row.state, 'UNAVAILABLE');
      assert.match(row.reason ?? '', new RegExp(`^failed to read text proto from ${name}/config\\.pbtxt: `));
      assert.ok(JSON.parse(r.body.toString()).error.endsWith(row.reason), 'the load error ends with the reason');
    }
    const rows = await index();
    assert.equal(rows.length, MODELS);
    assert.equal(rows.filter((e) => e.reason !== undefined).length, 2);
    assert.equal((await request(`${s.url}/v2/models/${GOOD}/ready`)).status, 200);
  });
});

describe('the same repository in mode none with --model-load-on-demand', () => {
  let od: TestServer;
  before(async () => {
    od = await startTestServer({ modelRepositories: [join(tmp, 'repository')], modelControlMode: 'none', modelLoadOnDemand: true });
  });
  after(async () => {
    await od?.close();
  });

  test('the server starts with nothing loaded and ready; the index lists all 5,000; a request loads its model alone', async () => {
    assert.equal((await request(`${od.url}/v2/health/ready`)).status, 200);
    const listed = (await postJson(`${od.url}/v2/repository/index`, {})).json() as { name: string; state?: string }[];
    assert.equal(listed.length, MODELS);
    assert.equal(listed.filter((e) => e.state !== undefined).length, 0);
    const input = { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: Array.from({ length: 16 }, (_, i) => i) };
    const infer = await postJson(`${od.url}/v2/models/${GOOD}/infer`, { inputs: [input, { ...input, name: 'INPUT1' }] });
    assert.equal(infer.status, 200, infer.body.toString());
    const ready = (await postJson(`${od.url}/v2/repository/index`, { ready: true })).json() as { name: string }[];
    assert.deepEqual(ready.map((e) => e.name), [GOOD]);
  });
});
