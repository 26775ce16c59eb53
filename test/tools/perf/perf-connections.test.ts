import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import { EXAMPLES } from '../../helpers/paths.js';
import { runNereid, spawnServer, type ServerProcess } from '../../helpers/server.js';
import { makeCertificates, opensslSkip } from '../../helpers/certificates.js';

// What `nereid perf` sends on the wire besides the requests: -H headers (over HTTP and as gRPC metadata), TLS
// for gRPC (--ssl-grpc-*) and for HTTPS (--ssl-https-*, through a TLS relay in front of the HTTP port, since
// neither Triton nor Nereid serves HTTPS itself), and --percentile. The server only answers inference calls
// that carry the header (--http-restricted-api / --grpc-restricted-protocol), so a header that does not reach
// it fails the run.

const skip = opensslSkip();
const FAST = ['-p', '250', '-s', '50', '-r', '6', '--concurrency-range', '2'];
const KEY = ['-H', 'X-Perf-Key: open'];
// Triton's restricted gRPC protocols read the key from metadata named triton-grpc-protocol-<key>.
const GRPC_KEY = ['-H', 'triton-grpc-protocol-x-perf-key: open'];
let dir: string;
let server: ServerProcess;
let http: string;
let grpc: string;
let relay: TlsServer;
let https: string;
const relayed = new Set<Socket>();

before(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'nereid-perf-tls-'));
  await makeCertificates(dir);
  server = await spawnServer([
    '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple',
    '--http-restricted-api=inference:x-perf-key=open', '--grpc-restricted-protocol=inference:x-perf-key=open',
    '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--grpc-use-ssl=true',
    `--grpc-server-cert=${join(dir, 'server.crt')}`, `--grpc-server-key=${join(dir, 'server.key')}`,
  ]);
  http = server.url.replace('http://', '');
  for (let k = 0; k < 100 && !/Started GRPCInferenceService at [^:]+:(\d+)/.test(server.output()); k++) await new Promise((r) => setTimeout(r, 50));
  grpc = `127.0.0.1:${/Started GRPCInferenceService at [^:]+:(\d+)/.exec(server.output())![1]}`;
  const [cert, key] = await Promise.all([readFile(join(dir, 'server.crt')), readFile(join(dir, 'server.key'))]);
  const port = Number(http.split(':')[1]);
  relay = createTlsServer({ cert, key }, (s) => {
    const up = connect(port, '127.0.0.1');
    relayed.add(s);
    s.pipe(up).pipe(s);
    const end = () => { s.destroy(); up.destroy(); relayed.delete(s); };
    s.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  https = `https://127.0.0.1:${(relay.address() as AddressInfo).port}`;
});

after(async () => {
  if (skip) return;
  for (const s of relayed) s.destroy();
  await new Promise((resolve) => relay.close(resolve));
  server.child.kill('SIGTERM');
  await server.exited;
  await rm(dir, { recursive: true, force: true });
});

test('-H reaches the server over HTTP: without it the restricted inference API refuses the run', { skip }, async () => {
  const refused = await runNereid(['perf', '-m', 'simple', '-u', http, ...FAST]);
  assert.notEqual(refused.code, 0, refused.out);
  assert.match(refused.out, /403|restricted|x-perf-key/i, refused.out);
  const r = await runNereid(['perf', '-m', 'simple', '-u', http, ...FAST, ...KEY, '--percentile', '95']);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Stabilizing using p95 latency/);
  assert.match(r.out, /Client p-th Batch Latency|p-th Batch Latency/);
});

test('gRPC over TLS with --ssl-grpc-use-ssl and the CA, the header sent as metadata; without TLS the run fails', { skip }, async () => {
  const ca = join(dir, 'ca.crt');
  const r = await runNereid(['perf', '-m', 'simple', '-i', 'grpc', '-u', grpc, '--ssl-grpc-use-ssl', '--ssl-grpc-root-certifications-file', ca, ...FAST, ...GRPC_KEY]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Request concurrency: 2\n/);
  const noHeader = await runNereid(['perf', '-m', 'simple', '-i', 'grpc', '-u', grpc, '--ssl-grpc-use-ssl', '--ssl-grpc-root-certifications-file', ca, ...FAST]);
  assert.notEqual(noHeader.code, 0, 'the metadata is what lets the calls through');
  const plain = await runNereid(['perf', '-m', 'simple', '-i', 'grpc', '-u', grpc, ...FAST, ...GRPC_KEY]);
  assert.notEqual(plain.code, 0, plain.out);
});

test('HTTPS through a TLS relay: an https:// URL with the CA given by --ssl-https-ca-certificates-file; an unknown CA is refused', { skip }, async () => {
  const r = await runNereid(['perf', '-m', 'simple', '-u', https, '--ssl-https-ca-certificates-file', join(dir, 'ca.crt'), ...FAST, ...KEY]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /Request concurrency: 2\n/);
  const untrusted = await runNereid(['perf', '-m', 'simple', '-u', https, ...FAST, ...KEY]);
  assert.notEqual(untrusted.code, 0, 'the system CAs do not know the test CA');
  assert.match(untrusted.out, /certificate|self.signed|unable to verify/i, untrusted.out);
});
