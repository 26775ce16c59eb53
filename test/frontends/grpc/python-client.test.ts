import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { PROTO_DIR, startGrpcTestServer, type GrpcTestServer } from '../../helpers/grpc.js';

// Proof with a client nobody here wrote the stubs of: Python stubs generated from proto/ by Debian's
// python3-grpc-tools, calling Nereid with python3-grpcio as Triton's example clients do (client.py). Outside CI
// the test skips when those packages are missing; in CI (which installs them) it runs.

const PYTHON = '/usr/bin/python3';
const probe = spawnSync(PYTHON, ['-c', 'import grpc, grpc_tools.protoc'], { encoding: 'utf8' });
const missing = probe.status === 0 ? undefined : 'python3-grpcio and python3-grpc-tools are not installed (apt-get install python3-grpcio python3-grpc-tools)';
const skip = missing && process.env.CI !== 'true' ? missing : false;

let repo: { dir: string; remove(): Promise<void> };
let s: GrpcTestServer;
let stubs: string;
before(async () => {
  if (skip) return;
  stubs = mkdtempSync(join(tmpdir(), 'nereid-py-stubs-'));
  const gen = spawnSync(PYTHON, ['-m', 'grpc_tools.protoc', `-I${PROTO_DIR}`, `--python_out=${stubs}`, `--grpc_python_out=${stubs}`, 'grpc_service.proto', 'model_config.proto', 'health.proto'], { encoding: 'utf8' });
  assert.equal(gen.status, 0, gen.stderr);
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(EXAMPLES, 'sequence_accumulator') }, { from: join(EXAMPLES, 'repeat_int32') }]);
  s = await startGrpcTestServer({ modelRepositories: [repo.dir], allowClientShm: true });
});
after(async () => {
  if (skip) return;
  await s.close();
  await repo.remove();
  rmSync(stubs, { recursive: true, force: true });
});

test('a Python client generated from proto/ calls every kind of RPC as Triton\'s example clients do', { skip }, async () => {
  const script = join(ROOT, 'test', 'frontends', 'grpc', 'python', 'client.py');
  // Run asynchronously: the server answering it lives in this process.
  const { code, out } = await new Promise<{ code: number | null; out: string }>((resolve) => {
    import('node:child_process').then(({ spawn }) => {
      const child = spawn(PYTHON, [script, stubs, `127.0.0.1:${s.grpc.port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (b: Buffer) => (text += b.toString()));
      child.stderr.on('data', (b: Buffer) => (text += b.toString()));
      child.on('exit', (c) => resolve({ code: c, out: text }));
    });
  });
  assert.equal(code, 0, out);
  const results = JSON.parse(out.trim().split('\n').pop()!).results as Record<string, boolean>;
  assert.ok(Object.values(results).every(Boolean), out);
  assert.ok(Object.keys(results).length >= 18, out);
});
