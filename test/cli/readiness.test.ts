import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths.js';

// Ready means every frontend listens: a client that waits for HTTP readiness and then dials gRPC, metrics or
// the OpenAI endpoint at once never finds a closed port. The other frontends bind a name (localhost), so each
// opens after a lookup, over several turns of the event loop in which the HTTP port already answers.

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Whether a TCP connection to the port is accepted. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, 'localhost');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Polls GET /v2/health/ready on several connections at once, so that some request is always waiting in the
 * server's queue, and the moment the first 200's status line arrives (before its body is read) dials every
 * other port. Resolves with the ports that refused.
 */
function dialWhenReady(httpPort: number, others: readonly number[], gone: () => boolean, out: () => string): Promise<number[]> {
  return new Promise((resolve, reject) => {
    let done = false;
    const poll = (): void => {
      if (done) return;
      if (gone()) {
        done = true;
        reject(new Error(`nereid exited before it was ready:\n${out()}`));
        return;
      }
      const req = http.get({ host: '127.0.0.1', port: httpPort, path: '/v2/health/ready', agent: false }, (res) => {
        res.resume();
        if (res.statusCode === 200 && !done) {
          done = true;
          void Promise.all(others.map(accepts)).then((ok) => resolve(others.filter((_, i) => !ok[i])));
        } else setImmediate(poll);
      });
      req.once('error', () => setTimeout(poll, 1));
    };
    for (let i = 0; i < 8; i++) poll();
  });
}

/** One start: polls HTTP ready, then dials every other frontend the moment it answers 200. Returns the failures. */
async function startAndDial(): Promise<string[]> {
  const [httpPort, grpc, metrics, openai] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const child = spawn(process.execPath, [
    join(ROOT, 'bin', 'nereid.js'), 'serve', `--model-repository=${join(ROOT, 'examples', 'model_repository')}`,
    '--model-control-mode=explicit', '--load-model=simple',
    `--http-port=${httpPort}`, '--http-address=127.0.0.1', '--allow-grpc=true', `--grpc-port=${grpc}`, '--grpc-address=localhost',
    '--allow-metrics=true', `--metrics-port=${metrics}`, '--metrics-address=localhost', `--openai-port=${openai}`, '--openai-address=localhost',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let gone = false;
  void exited.then(() => (gone = true));
  try {
    const names = new Map([[grpc, 'gRPC'], [metrics, 'metrics'], [openai, 'OpenAI']]);
    const refused = await dialWhenReady(httpPort, [...names.keys()], () => gone, () => out);
    return refused.map((p) => names.get(p)!);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

test('every frontend listens by the time HTTP says the server is ready', async () => {
  const failures: string[] = [];
  for (let i = 0; i < 5; i++) failures.push(...await startAndDial());
  assert.deepEqual(failures, []);
});
