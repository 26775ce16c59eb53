import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson } from '../helpers/http.js';

// The server's own shared-memory objects (its Python stubs' input and output regions) carry other clients'
// tensors: no client may register them. Nor may a client register keys under the prefixes kept for such objects,
// Nereid's and Triton's, however many slashes lead the key (shm_open strips them all), nor keys that name no
// object at all ('/', '///').

const OWN_PREFIX = 'nereid_test_own_';
let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
const made: string[] = [];

before(async () => {
  repo = await tempRepository([{ from: join(ROOT, 'examples', 'python_repository', 'add_sub') }]);
  s = await startTestServer({
    modelRepositories: [repo.dir], allowClientShm: true,
    // A prefix of the operator's choosing (Triton's shm-region-prefix-name): the server knows it as its own too.
    backendConfig: { python: { 'shm-region-prefix-name': OWN_PREFIX } },
  });
  // One request, so that the stub's output regions exist as well as the server's input region.
  const r = await postJson(`${s.url}/v2/models/add_sub/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
      { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
    ],
  });
  assert.equal(r.status, 200, r.body.toString());
});
after(async () => {
  await s.close();
  await repo.remove();
  for (const p of made) rmSync(p, { force: true });
});

/** An object a client made under a name of its choosing, so that only the server's refusal stops the registration. */
function objectNamed(name: string): void {
  const path = `/dev/shm/${name}`;
  writeFileSync(path, Buffer.alloc(4096));
  made.push(path);
}

let n = 0;
const register = (key: string) => postJson(`${s.url}/v2/systemsharedmemory/region/reserved_${n++}/register`, { key, byte_size: 64 });

const TRITON = 'triton_python_backend_shm_region_';
const NEREID = 'nereid_python_';

test('keys under the reserved prefixes are refused, with or without leading slashes', async () => {
  const tritons = `${TRITON}${process.pid}_x`;
  const nereids = `${NEREID}${process.pid}_x`;
  objectNamed(tritons);
  objectNamed(nereids);
  const cases: [string, string][] = [
    [tritons, TRITON], [`/${tritons}`, TRITON], [`///${tritons}`, TRITON],
    [nereids, NEREID], [`/${nereids}`, NEREID], [`//${nereids}`, NEREID],
  ];
  for (const [key, prefix] of cases) {
    const r = await register(key);
    assert.equal(r.status, 400, `${key}: ${r.body.toString()}`);
    assert.match(r.json().error, new RegExp(`^cannot register shared memory region 'reserved_\\d+' with key '${key}' as the key contains the reserved prefix '${prefix}'$`));
  }
});

test("the server's own live regions are refused under any spelling of their key", async () => {
  const own = readdirSync('/dev/shm').filter((f) => f.startsWith(OWN_PREFIX));
  // The server's input region and the stub's output regions.
  assert.ok(own.some((f) => /_in\d+$/.test(f)), own.join(', '));
  assert.ok(own.some((f) => /_out\d+$/.test(f)), own.join(', '));
  for (const name of own) {
    // Unguessable: a random part after the pid.
    assert.match(name, new RegExp(`^${OWN_PREFIX}${process.pid}_[0-9a-f]{12}_`));
    for (const key of [name, `/${name}`, `///${name}`]) {
      const r = await register(key);
      assert.equal(r.status, 400, `${key}: ${r.body.toString()}`);
      assert.match(r.json().error, /^cannot register shared memory region 'reserved_\d+' with key '.*' as the key names a shared memory object of the server's own$/);
    }
  }
});

test("keys that name no object are refused up front with Triton's 400", async () => {
  for (const key of ['', '/', '///']) {
    const r = await register(key);
    assert.equal(r.status, 400, `${JSON.stringify(key)}: ${r.body.toString()}`);
    assert.equal(r.json().error, `Unable to open shared memory region: '${key}'`);
  }
  // shm_open would stop at the NUL and open another object.
  const nul = await register('a\u0000b');
  assert.equal(nul.status, 400, nul.body.toString());
  assert.match(nul.json().error, /^failed to register shared memory region 'reserved_\d+': invalid args$/);
  // The server still serves its Python model.
  const r = await postJson(`${s.url}/v2/models/add_sub/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [4], datatype: 'FP32', data: [1, 2, 3, 4] },
      { name: 'INPUT1', shape: [4], datatype: 'FP32', data: [1, 1, 1, 1] },
    ],
  });
  assert.equal(r.status, 200, r.body.toString());
  assert.deepEqual(r.json().outputs[0].data, [2, 3, 4, 5]);
});
