import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import type { Tensor } from '../../../src/index.js';

// JavaScript instances share a server's pool of worker threads: several models in one thread when the pool is
// bounded to one, instances of one model spread over threads when it may grow, a model with
// nereid_dedicated_worker alone. Each instance still has its own module state and its own model folder.

const JS = join(FIXTURES, 'js');

/** [thread id, instances its module made, model folder length] of each of 8 concurrent requests. */
async function where(s: TestServer, model: string): Promise<number[][]> {
  const input: Tensor = { name: 'IN', datatype: 'INT32', shape: [1], data: new Uint8Array(4) };
  const answers = await Promise.all(Array.from({ length: 8 }, () => s.server.infer({ model, inputs: [input] })));
  return answers.map((r) => [...new Int32Array((r.outputs[0]!.data as Uint8Array).slice().buffer)]);
}

const threads = (rows: number[][]): Set<number> => new Set(rows.map((r) => r[0]!));

test('with worker-threads 1, the instances of two models share one worker, each with its own module and folder', async () => {
  const s = await startTestServer({
    modelRepositories: [JS], modelControlMode: 'explicit', loadModels: ['where_js', 'where_js_too'],
    backendConfig: { javascript: { 'worker-threads': '1' } },
  });
  try {
    const a = await where(s, 'where_js');
    const b = await where(s, 'where_js_too');
    assert.equal(threads([...a, ...b]).size, 1);
    for (const [, made, dir] of [...a, ...b]) {
      assert.equal(made, 1, 'each instance imports the model file as a module of its own');
      assert.ok(dir! > 0, 'getModelDir() names the calling instance\'s folder, also after an await');
    }
  } finally {
    await s.close();
  }
});

test('instances of one model spread over the pool\'s workers, which other models share; a dedicated model has its own', async () => {
  const repo = await tempRepository([{ from: join(JS, 'where_js') }, { from: join(JS, 'where_js_too') }, { from: join(JS, 'where_js'), name: 'where_js_three' }]);
  const rename = join(repo.dir, 'where_js_three', 'config.pbtxt');
  await writeFile(rename, (await readFile(rename, 'utf8')).replace('name: "where_js"', 'name: "where_js_three"'));
  const cfg = join(repo.dir, 'where_js_too', 'config.pbtxt');
  await writeFile(cfg, `${await readFile(cfg, 'utf8')}\nparameters { key: "nereid_dedicated_worker" value { string_value: "true" } }\n`);
  const s = await startTestServer({ modelRepositories: [repo.dir], backendConfig: { javascript: { 'worker-threads': '2' } } });
  try {
    const a = threads(await where(s, 'where_js'));
    const c = threads(await where(s, 'where_js_three'));
    const b = threads(await where(s, 'where_js_too'));
    assert.equal(a.size, 2);
    assert.deepEqual([...c].sort(), [...a].sort(), 'two models of two instances each fill the two shared workers');
    assert.equal(b.size, 2);
    assert.deepEqual([...a].filter((t) => b.has(t)), []);
  } finally {
    await s.close();
    await repo.remove();
  }
});
