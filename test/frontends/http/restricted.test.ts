import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES } from '../../helpers/paths.js';
import { postJson, request } from '../../helpers/http.js';
import { spawnServer } from '../../helpers/server.js';

// --http-restricted-api and --http-header-forward-pattern through `nereid serve`: restricted categories
// answer 403 with Triton's message unless the request carries the group's header and value; other categories
// are open; headers matching the pattern reach the model as parameters. Unhonourable HTTP flags warn.

test('--http-restricted-api guards its categories; --http-header-forward-pattern forwards headers to the model', async () => {
  const p = await spawnServer([
    '--model-repository', join(FIXTURES, 'js'), '--model-control-mode=explicit', '--load-model=inspect',
    '--http-restricted-api=model-repository,logging:admin-key=secret', '--http-restricted-api=inference:infer-key=go',
    '--http-header-forward-pattern=^x-team', '--http-thread-count=4', '--reuse-http-port=true',
  ]);
  try {
    const url = p.url;
    const refused = (key: string) => ({ error: `This API is restricted, expecting header '${key}'` });
    for (const [path, method] of [['/v2/repository/index', 'POST'], ['/v2/repository/models/inspect/unload', 'POST'], ['/v2/logging', 'GET']] as const) {
      const r = await request(`${url}${path}`, { method });
      assert.equal(r.status, 403, path);
      assert.deepEqual(r.json(), refused('admin-key'), path);
      assert.equal((await request(`${url}${path}`, { method, headers: { 'admin-key': 'wrong' } })).status, 403, path);
    }
    const index = await request(`${url}/v2/repository/index`, { method: 'POST', headers: { 'Admin-Key': 'secret' } });
    assert.equal(index.status, 200);
    assert.deepEqual(index.json().map((m: any) => m.name).includes('inspect'), true);
    assert.equal((await request(`${url}/v2/logging`, { headers: { 'admin-key': 'secret' } })).status, 200);

    // Unrestricted categories stay open.
    assert.equal((await request(`${url}/v2/health/ready`)).status, 200);
    assert.equal((await request(`${url}/v2/models/inspect`)).status, 200);
    assert.equal((await request(`${url}/v2/models/inspect/config`)).status, 200);

    const body = { inputs: [{ name: 'IN', shape: [2], datatype: 'INT32', data: [1, 2] }], parameters: { mine: 'kept' } };
    const blocked = await postJson(`${url}/v2/models/inspect/infer`, body, { 'x-team-name': 'vision' });
    assert.deepEqual([blocked.status, blocked.json()], [403, refused('infer-key')]);
    const ok = await postJson(`${url}/v2/models/inspect/infer`, body, { 'infer-key': 'go', 'X-Team-Name': 'vision', 'x-other': 'dropped' });
    assert.equal(ok.status, 200, JSON.stringify(ok.json()));
    const info = JSON.parse(ok.json().outputs.find((o: any) => o.name === 'INFO').data[0]);
    // Under the name as the client spelled it, as Triton's HTTP server forwards a header (http_server.cc).
    assert.deepEqual(info.parameters, { 'X-Team-Name': 'vision', mine: 'kept' });

    for (const flag of ['http-thread-count=4', 'reuse-http-port=true']) assert.match(p.output(), new RegExp(`^W.*--${flag} has no effect: `, 'm'), flag);
  } finally {
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0, p.output());
  }
});
