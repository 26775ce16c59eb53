import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EXAMPLES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';
import { postJson, request } from '../../helpers/http.js';

// Triton's client example simple_http_model_control.py, request by request, with the checks it makes: a server in
// explicit mode over a repository of seven models, of which the example loads, reconfigures and unloads `simple`.

const SEVEN = ['simple', 'simple_identity', 'simple_int8', 'simple_string', 'simple_sequence', 'simple_dyna_sequence', 'repeat_int32'];

let s: TestServer;
let repo: { dir: string; remove(): Promise<void> };
before(async () => {
  repo = await tempRepository(SEVEN.map((m) => ({ from: join(EXAMPLES, m) })));
  s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit' });
});
after(async () => {
  await s.close();
  await repo.remove();
});

const load = (model: string, parameters?: Record<string, string>) =>
  postJson(`${s.url}/v2/repository/models/${model}/load`, parameters ? { parameters } : {});
const ready = async (model: string) => (await request(`${s.url}/v2/models/${model}/ready`)).status === 200;

test('simple_http_model_control.py: every step answers as the example expects, so it prints PASS', async () => {
  const index = (await postJson(`${s.url}/v2/repository/index`, {})).json();
  assert.equal(index.length, 7, JSON.stringify(index));

  assert.equal((await load('simple')).status, 200);
  assert.ok(await ready('simple'));

  // The example's malformed override: not JSON at all. A client mistake, so 400, in Triton's words.
  const bad = await load('simple', { config: '"parameters": {"config": {{"max_batch_size": "16"}}}' });
  assert.equal(bad.status, 400);
  assert.match(bad.json().error, /^failed to load 'simple', failed to poll from model repository: Invalid config override: /);

  // A 64-bit field given as a JSON string, as protobuf's JSON mapping allows.
  const good = await load('simple', { config: '{"max_batch_size":"16"}' });
  assert.equal(good.status, 200, good.body.toString());
  const config = (await request(`${s.url}/v2/models/simple/config`)).json();
  assert.equal(config.max_batch_size, 16);

  assert.equal((await postJson(`${s.url}/v2/repository/models/simple/unload`, {})).status, 200);
  assert.ok(!(await ready('simple')));

  const wrong = await load('wrong_model_name');
  assert.equal(wrong.status, 400);
  assert.match(wrong.json().error, /^failed to load 'wrong_model_name'/);
});

test('an override file whose name is too long for the file system: 500 and Triton\'s words, no server path', async () => {
  const r = await load('simple', { config: '{}', [`file:${'A'.repeat(256)}`]: Buffer.from('a').toString('base64') });
  assert.equal(r.status, 500, r.body.toString());
  assert.equal(r.json().error, "failed to load 'simple', failed to poll from model repository");
  assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
});

// Triton's HandleModelReady answers 400 when TRITONSERVER_ServerModelIsReady gives not-ready, which it does for
// a model in the repository that is not loaded (L0_lifecycle, explicit mode) and for a name it does not know.
test('ready: a model in the repository but not loaded is not ready (400), as a name in no repository is', async () => {
  for (const name of ['simple_int8', 'not_in_any_repository']) {
    const r = await request(`${s.url}/v2/models/${name}/ready`);
    assert.equal(r.status, 400, name);
    assert.deepEqual(r.json(), { error: 'Model version not ready' }, name);
  }
});
