import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../../helpers/server.js';

// A client nobody here wrote the shared memory for: Python's multiprocessing.shared_memory creates the objects
// and numpy fills and reads them, as a Triton user's client does (Debian's /usr/bin/python3, which has numpy).

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import numpy, multiprocessing.shared_memory'], { encoding: 'utf8' });
const missing = probe.status === 0 ? undefined : `needs ${PYTHON} with numpy (Debian's python3-numpy): ${probe.error?.message ?? probe.stderr.trim()}`;

let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
before(async () => {
  if (missing) return;
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  s = await startTestServer({ modelRepositories: [repo.dir], allowClientShm: true });
});
after(async () => {
  await s?.close();
  await repo?.remove();
});

test('a Python client with multiprocessing.shared_memory runs simple with inputs and outputs in shared memory', { skip: missing }, async () => {
  const out = await new Promise<string>((resolve, reject) => {
    execFile(PYTHON, [join(FIXTURES, 'shm', 'simple_client.py'), s.url], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
  const result = JSON.parse(out.trim().split('\n').pop()!) as { ok: boolean; error?: string };
  assert.ok(result.ok, result.error);
});
