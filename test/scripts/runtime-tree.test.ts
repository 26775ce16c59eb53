import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT } from '../helpers/paths.js';
import { postJson } from '../helpers/http.js';
import { checkSimpleOverGrpc, checkSimpleOverHttp } from '../helpers/simple-model.js';
import { startServeCommand } from '../helpers/serve-process.js';

// The runtime tree the container image copies (scripts/runtime-tree.mjs): small, and enough to serve the
// bundled repository as an unprivileged user that can write nothing but a temp dir. The Dockerfile itself is not
// built here (no container engine on the test machines); this is what its last stage holds.

const SIZE_GOAL = 200 * 1000 * 1000;
const NOBODY = 65534;

function setprivMissing(): string | undefined {
  if (process.getuid?.() !== 0) return 'the test switches to an unprivileged user with setpriv, which needs root';
  try {
    execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'setpriv (util-linux) is not installed';
  }
}

const missing = setprivMissing();
const skip = missing && process.env.CI !== 'true' ? missing : false;

function files(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) files(p, out);
    else out.push(p);
  }
  return out;
}

test('the runtime tree is under 200 MB, holds one platform, and serves the examples read-only as an unprivileged user', { skip, timeout: 240_000 }, async () => {
  assert.equal(missing, undefined, missing);
  const base = mkdtempSync(join(tmpdir(), 'nereid-runtime-tree-'));
  const tree = join(base, 'tree');
  const writable = join(base, 'tmp');
  try {
    const out = execFileSync(process.execPath, [join(ROOT, 'scripts', 'runtime-tree.mjs'), '--out', tree, '--examples'], { encoding: 'utf8' });
    const size = Number(/size (\d+)/.exec(out)![1]);
    console.log(`runtime tree: ${(size / 1e6).toFixed(1)} MB`);
    assert.ok(size <= SIZE_GOAL, `the runtime tree has ${size} bytes, more than the goal of ${SIZE_GOAL}`);

    const all = files(tree);
    assert.deepEqual(all.filter((f) => /\.(map|d\.ts)$/.test(f)), [], 'no declarations or source maps');
    assert.ok(!existsSync(join(tree, 'node_modules', 'typescript')), 'no optional peer dependencies (typescript)');
    assert.ok(!existsSync(join(tree, 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle')), "no llama.cpp sources");
    const ortPlatforms = readdirSync(join(tree, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6'));
    assert.deepEqual(ortPlatforms, ['linux']);
    assert.deepEqual(readdirSync(join(tree, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux')), [process.arch]);
    assert.deepEqual(readdirSync(join(tree, 'node_modules', '@node-llama-cpp')), [`linux-${process.arch}`], "node-llama-cpp's CPU build only");
    assert.ok(!existsSync(join(tree, 'dist', 'test')), 'no tests');
    const links = all.filter((f) => lstatSync(f).isSymbolicLink());
    assert.deepEqual(links.filter((f) => !existsSync(f) || !realpathSync(f).startsWith(tree)), [], 'no links out of the tree');

    // Read-only for the server's user: owned by root, nothing writable by others; the parent must be passable.
    chmodSync(base, 0o755);
    for (const f of all) assert.equal(statSync(f).mode & 0o002, 0, `${f} is writable by anyone`);
    execFileSync('mkdir', ['-m', '0700', writable]);
    chownSync(writable, NOBODY, NOBODY);
    const before = all.length;

    // As in the image: `nereid` on the PATH is a link to the tree's bin/nereid.js, run by the node on the PATH.
    const pathDir = join(base, 'path');
    execFileSync('mkdir', ['-m', '0755', pathDir]);
    symlinkSync(join(tree, 'bin', 'nereid.js'), join(pathDir, 'nereid'));
    const env = { PATH: `${pathDir}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: writable, TMPDIR: writable };
    const s = await startServeCommand('setpriv', [
      `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--no-new-privs',
      'nereid', 'serve',
      `--model-repository=${join(tree, 'examples', 'model_repository')}`,
      '--http-address=127.0.0.1', '--http-port=0', '--grpc-address=127.0.0.1', '--grpc-port=0', '--allow-metrics=false',
    ], { env, cwd: writable, grpc: true });
    try {
      const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${s.child.pid}/status`, 'utf8'))![1];
      assert.equal(Number(uid), NOBODY, 'the server runs as the unprivileged user');
      const url = `http://127.0.0.1:${s.httpPort}`;
      assert.equal((await fetch(`${url}/v2/health/ready`)).status, 200);
      const index = (await postJson(`${url}/v2/repository/index`, {})).json() as { name: string; state: string }[];
      const examples = readdirSync(join(ROOT, 'examples', 'model_repository')).sort();
      assert.deepEqual([...new Set(index.filter((m) => m.state === 'READY').map((m) => m.name))].sort(), examples, 'every example model loads');
      // ONNX Runtime, gRPC (proto files) and llama.cpp, each from the pruned tree.
      await checkSimpleOverHttp(url);
      await checkSimpleOverGrpc(s.grpcPort!);
      const g = await postJson(`${url}/v2/models/tiny_llm/generate`, { text_input: 'hello', parameters: { max_tokens: 3, temperature: 0 } });
      assert.equal(g.status, 200, g.body.toString());
      assert.equal(typeof g.json().text_output, 'string');
    } finally {
      assert.equal(await s.stop(), 0, s.output());
    }
    assert.equal(files(tree).length, before, 'the server wrote nothing into its tree');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});
