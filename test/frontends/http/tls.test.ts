import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { MAX_PENDING_HANDSHAKES, type TlsLimits } from '../../../src/frontends/tls-listener.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { makeCertificates, opensslSkip } from '../../helpers/certificates.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { runNereid, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { until } from '../../helpers/until.js';

// TLS on the HTTP and OpenAI ports (--http-use-ssl and the rest, Triton's names for gRPC's) through `nereid
// serve`: curl and Node's clients over HTTPS, mutual TLS, TLS 1.1 refused, a rotated certificate served
// without a restart, and a flood of connections that stop mid-handshake not keeping a normal client out.

const skip = opensslSkip();
const run = promisify(execFile);

interface Reply { status: number; body: string }

function request(port: number, path: string, o: { ca: Buffer; agent?: https.Agent; cert?: Buffer; key?: Buffer; body?: string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port, path, method: o.body === undefined ? 'GET' : 'POST', ca: o.ca, cert: o.cert, key: o.key, agent: o.agent ?? false,
      headers: o.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(o.body) },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

/** The SHA-256 fingerprint of the certificate a new connection to `port` is served. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.destroy();
    });
    s.on('error', reject);
  });
}

async function withCertificates(body: (dir: string, ca: Buffer) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-https-'));
  try {
    await makeCertificates(dir);
    await body(dir, await readFile(join(dir, 'ca.crt')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function serve(args: string[]): Promise<{ p: ServerProcess; port: number }> {
  const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', ...args]);
  return { p, port: Number(new URL(p.url).port) };
}

async function stop(p: ServerProcess): Promise<void> {
  p.child.kill('SIGTERM');
  await p.exited;
}

const range16 = Array.from({ length: 16 }, (_, i) => i);
const INFER = JSON.stringify({ inputs: [
  { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: range16 },
  { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: range16 },
] });

test('--http-use-ssl: curl and Node clients get HTTPS answers, kept-alive requests included; plain HTTP and TLS 1.1 are refused', { skip }, () =>
  withCertificates(async (dir, ca) => {
    const { p, port } = await serve(['--http-use-ssl=true', `--http-server-cert=${join(dir, 'server.crt')}`, `--http-server-key=${join(dir, 'server.key')}`]);
    try {
      const curl = await run('curl', ['-s', '--cacert', join(dir, 'ca.crt'), '-o', '/dev/null', '-w', '%{http_code} %{ssl_verify_result}', `https://localhost:${port}/v2/health/ready`]);
      assert.equal(curl.stdout, '200 0');
      const curlInfer = await run('curl', ['-s', '--cacert', join(dir, 'ca.crt'), '-H', 'content-type: application/json', '-d', INFER, `https://127.0.0.1:${port}/v2/models/simple/infer`]);
      assert.deepEqual(JSON.parse(curlInfer.stdout).outputs[0].data, range16.map((v) => 2 * v));

      // Several requests on one kept-alive connection: the plain ones are read from the TLS socket's plaintext.
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; i < 5; i++) {
        const r = await request(port, '/v2/models/simple/infer', { ca, agent, body: INFER });
        assert.equal(r.status, 200, r.body);
        assert.deepEqual(JSON.parse(r.body).outputs[1].data, range16.map(() => 0));
      }
      assert.equal(Object.values(agent.freeSockets).flat().length, 1, 'the five requests shared one connection');
      agent.destroy();

      // A plain HTTP request to the TLS port gets no HTTP answer.
      const plain = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '--max-time', '20', `http://127.0.0.1:${port}/v2/health/live`]).catch((e: { stdout: string }) => e);
      assert.equal(plain.stdout, '000');

      // TLS 1.2 at least: a client that offers 1.1 at most is refused in the handshake, and the same client with 1.2 is served.
      const connect = (maxVersion: tls.SecureVersion): Promise<string> => new Promise((resolve) => {
        const s = tls.connect({ host: '127.0.0.1', port, ca, minVersion: 'TLSv1', maxVersion, ciphers: 'DEFAULT@SECLEVEL=0' }, () => {
          resolve(`connected ${s.getProtocol()}`);
          s.destroy();
        });
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      });
      // The client can speak 1.1 (it connects to a server that allows it): the refusal is the server's alert.
      assert.match(await connect('TLSv1.1'), /TLSV1_ALERT_PROTOCOL_VERSION/);
      assert.equal(await connect('TLSv1.2'), 'connected TLSv1.2');
    } finally {
      await stop(p);
    }
  }));

test('--http-use-ssl-mutual requires a client certificate that chains to --http-root-cert; the OpenAI port takes HTTP\'s settings', { skip }, () =>
  withCertificates(async (dir, ca) => {
    const [cert, key] = await Promise.all([readFile(join(dir, 'client.crt')), readFile(join(dir, 'client.key'))]);
    const { p, port } = await serve([
      '--http-use-ssl-mutual=true', `--http-server-cert=${join(dir, 'server.crt')}`, `--http-server-key=${join(dir, 'server.key')}`,
      `--http-root-cert=${join(dir, 'ca.crt')}`, '--openai-port=0', '--openai-address=127.0.0.1',
    ]);
    try {
      await until(() => /Started OpenAI-compatible service over TLS at [^\n]*:\d+/.test(p.output()), 'the OpenAI port');
      const openaiPort = Number(/Started OpenAI-compatible service over TLS at [^\n]*:(\d+)/.exec(p.output())![1]);
      for (const [at, path] of [[port, '/v2/health/live'], [openaiPort, '/v1/models']] as const) {
        assert.equal((await request(at, path, { ca, cert, key })).status, 200, `${path} with a client certificate`);
        await assert.rejects(request(at, path, { ca }), `${path} without a client certificate is refused`);
        const curl = await run('curl', ['-s', '--cacert', join(dir, 'ca.crt'), '--cert', join(dir, 'client.crt'), '--key', join(dir, 'client.key'),
          '-o', '/dev/null', '-w', '%{http_code}', `https://localhost:${at}${path}`]);
        assert.equal(curl.stdout, '200');
      }
    } finally {
      await stop(p);
    }
  }));

test('a rotated certificate and key are served to new connections without a restart', { skip }, () =>
  withCertificates(async (dir) => {
    const live = await mkdtemp(join(tmpdir(), 'nereid-https-live-'));
    try {
      await copyFile(join(dir, 'server.crt'), join(live, 'server.crt'));
      await copyFile(join(dir, 'server.key'), join(live, 'server.key'));
      const { p, port } = await serve(['--http-use-ssl=true', `--http-server-cert=${join(live, 'server.crt')}`, `--http-server-key=${join(live, 'server.key')}`]);
      try {
        const before = await servedFingerprint(port);
        const next = join(dir, 'next');
        await mkdir(next);
        await makeCertificates(next);
        const nextPrint = new X509Certificate(await readFile(join(next, 'server.crt'))).fingerprint256;
        assert.notEqual(nextPrint, before);
        await copyFile(join(next, 'server.key'), join(live, 'server.key'));
        await copyFile(join(next, 'server.crt'), join(live, 'server.crt'));
        await until(async () => (await servedFingerprint(port)) === nextPrint, 'the new certificate', 30_000);
        // The server kept running and answers over the new certificate.
        const r = await request(port, '/v2/health/live', { ca: await readFile(join(next, 'ca.crt')) });
        assert.equal(r.status, 200);
      } finally {
        await stop(p);
      }
    } finally {
      await rm(live, { recursive: true, force: true });
    }
  }));

/** The HTTP frontend over TLS in this process, with handshake bounds of the test's choosing. */
async function inProcess(dir: string, tlsLimits: TlsLimits): Promise<{ port: number; close(): Promise<void> }> {
  const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'] }, { logger });
  const files = { cert: join(dir, 'server.crt'), key: join(dir, 'server.key'), rootCert: '', mutual: false };
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20, tls: files, tlsLimits }, logger);
  return { port: http.port, close: async () => { await server.close(5); await http.close(); } };
}

/** `count` connections that send half a TLS record header and stop; `closed` counts those the server ends. */
function stalledHandshakes(port: number, count: number): { sockets: net.Socket[]; closed: () => number } {
  let closed = 0;
  const sockets = Array.from({ length: count }, () => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    s.on('close', () => closed++);
    s.on('connect', () => s.write(Buffer.from([0x16, 0x03, 0x01])));
    return s;
  });
  return { sockets, closed: () => closed };
}

test('a flood of connections that stop mid-handshake holds at most the bound, oldest out first, and a normal client is served', { skip }, () =>
  withCertificates(async (dir, ca) => {
    // A handshake timeout far past the test's length: only the bound closes connections here.
    const max = 16;
    const s = await inProcess(dir, { handshakeTimeoutMs: 600_000, maxPendingHandshakes: max });
    let flood: ReturnType<typeof stalledHandshakes> | undefined;
    try {
      const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
      assert.equal((await request(s.port, '/v2/health/live', { ca, agent })).status, 200);
      const count = max + 50;
      flood = stalledHandshakes(s.port, count);
      const { sockets, closed } = flood;
      await until(() => sockets.every((c) => !c.connecting), 'the flood to connect');
      await until(() => closed() >= count - max, `${count - max} stalled handshakes closed`);
      // A new client and the kept-alive one (its handshake long done, so never counted) are both served.
      assert.equal((await request(s.port, '/v2/models/simple/infer', { ca, body: INFER })).status, 200);
      assert.equal((await request(s.port, '/v2/models/simple/infer', { ca, agent, body: INFER })).status, 200);
      agent.destroy();
      // The new client's handshake pushed out one more stalled connection, and no other was closed.
      await until(() => closed() >= count - max + 1, 'the oldest stalled handshake closed for the new client');
      assert.equal(closed(), count - max + 1);
      assert.ok(sockets.slice(count - max + 1).every((c) => !c.destroyed), 'the newest stalled connections are the ones kept');
    } finally {
      for (const c of flood?.sockets ?? []) c.destroy();
      await s.close();
    }
  }));

test('a handshake that does not finish in time ends its connection', { skip }, () =>
  withCertificates(async (dir) => {
    const s = await inProcess(dir, { handshakeTimeoutMs: 2000, maxPendingHandshakes: MAX_PENDING_HANDSHAKES });
    const flood = stalledHandshakes(s.port, 5);
    try {
      const started = Date.now();
      await until(() => flood.closed() === 5, 'the stalled handshakes to time out', 30_000);
      assert.ok(Date.now() - started >= 1500, `closed after ${Date.now() - started} ms, before the 2 s handshake timeout`);
    } finally {
      for (const c of flood.sockets) c.destroy();
      await s.close();
    }
  }));

test('the OpenAI port\'s own --openai-use-ssl wins over HTTP\'s; --http-use-ssl without a certificate stops the start', { skip }, () =>
  withCertificates(async (dir, ca) => {
    const { p, port } = await serve(['--http-use-ssl=true', `--http-server-cert=${join(dir, 'server.crt')}`, `--http-server-key=${join(dir, 'server.key')}`,
      '--openai-port=0', '--openai-address=127.0.0.1', '--openai-use-ssl=false']);
    try {
      await until(() => /Started OpenAI-compatible service at [^\n]*:\d+/.test(p.output()), 'the OpenAI port');
      const openaiPort = Number(/Started OpenAI-compatible service at [^\n]*:(\d+)/.exec(p.output())![1]);
      const plain = await fetch(`http://127.0.0.1:${openaiPort}/v1/models`);
      assert.equal(plain.status, 200);
      assert.equal((await request(port, '/v2/health/live', { ca })).status, 200);
    } finally {
      await stop(p);
    }
    const { code, out } = await runNereid(['serve', '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--http-port=0', '--allow-grpc=false',
      '--allow-metrics=false', '--http-use-ssl=true', `--http-server-key=${join(dir, 'server.key')}`]);
    assert.notEqual(code, 0);
    assert.match(out, /--http-use-ssl needs --http-server-cert and --http-server-key/);
  }));
