import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, EXAMPLES } from '../helpers/paths.js';
import { connect, unary } from '../helpers/grpc.js';

// A package installed under a folder whose name has a space (or any character a file URL escapes) finds its own
// files: the gRPC frontend's .proto files, a JavaScript model's worker and the web console's files.

/** A copy of the package's runtime files (all but `skip`) in `pkg`, with the checkout's modules and native build. */
async function copyPackage(pkg: string, skip: string[] = []): Promise<void> {
  await mkdir(pkg, { recursive: true });
  for (const part of ['package.json', 'bin', 'proto', 'python', 'console', join('dist', 'src')]) {
    if (!skip.includes(part)) await cp(join(ROOT, part), join(pkg, part), { recursive: true });
  }
  await cp(join(ROOT, 'build', 'Release'), join(pkg, 'build', 'Release'), { recursive: true }).catch(() => undefined);
  await symlink(join(ROOT, 'node_modules'), join(pkg, 'node_modules'));
}

/** `nereid serve` from the copied package; resolves once `started` matches its log, with the port it captured. */
async function servePackage(pkg: string, args: string[], started: RegExp): Promise<{ port: number; output: () => string; stop: () => Promise<unknown> }> {
  const child = spawn(process.execPath, [join(pkg, 'bin', 'nereid.js'), 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const stop = (): Promise<unknown> => {
    child.kill('SIGTERM');
    return exited;
  };
  const port = await new Promise<number>((resolve, reject) => {
    const poll = setInterval(() => {
      const m = started.exec(out);
      if (m) {
        clearInterval(poll);
        resolve(Number(m[1]));
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(poll);
      reject(new Error(`nereid exited with ${code}:\n${out}`));
    });
  });
  return { port, output: () => out, stop };
}

test('nereid serves gRPC and JavaScript models when installed under a path with a space', async () => {
  const base = await mkdtemp(join(tmpdir(), 'nereid install '));
  const pkg = join(base, 'my packages', 'nereid');
  try {
    await copyPackage(pkg);
    const served = await servePackage(pkg, [
      `--model-repository=${EXAMPLES}`, '--model-control-mode=explicit', '--load-model=simple', '--load-model=repeat_int32',
      '--http-port=0', '--http-address=127.0.0.1', '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--allow-metrics=false',
    ], /Started GRPCInferenceService at [^:]+:(\d+)/);
    try {
      const client = connect(served.port);
      try {
        assert.deepEqual(await unary(client, 'ServerReady', {}), { ready: true });
        assert.deepEqual(await unary(client, 'ModelReady', { name: 'repeat_int32' }), { ready: true });
      } finally {
        client.close();
      }
      const http = Number(/Started HTTPService at [^:]+:(\d+)/.exec(served.output())![1]);
      const page = await fetch(`http://127.0.0.1:${http}/console/`);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);
    } finally {
      await served.stop();
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

test('a package copied without its console folder serves without the console, and says why once', async () => {
  const pkg = await mkdtemp(join(tmpdir(), 'nereid-no-console-'));
  try {
    await copyPackage(pkg, ['console']);
    const served = await servePackage(pkg, [
      `--model-repository=${EXAMPLES}`, '--model-control-mode=explicit', '--load-model=simple', '--http-port=0', '--http-address=127.0.0.1',
      '--allow-grpc=false', '--allow-metrics=false',
    ], /Started HTTPService at [^:]+:(\d+)/);
    try {
      const http = `http://127.0.0.1:${served.port}`;
      assert.equal(served.output().match(/the web console is off: its files cannot be read \(ENOENT/g)?.length, 1, served.output());
      assert.equal((await fetch(`${http}/console/`)).status, 404);
      assert.equal((await fetch(`${http}/v2/health/ready`)).status, 200);
      const infer = await fetch(`${http}/v2/models/simple/infer`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) })) }),
      });
      assert.equal(infer.status, 200);
    } finally {
      await served.stop();
    }
  } finally {
    await rm(pkg, { recursive: true, force: true });
  }
});
