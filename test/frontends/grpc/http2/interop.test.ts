import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from '../../../helpers/paths.js';
import { startGrpcTestServer, type GrpcTestServer } from '../../../helpers/grpc.js';
import { CompressionError, HeaderDecoder } from '../../../../src/frontends/grpc/http2/hpack.js';
import { chance, fuzzCases, fuzzSeed, int, seeded } from '../../../helpers/fuzz.js';
import { randomBlock } from '../../../helpers/hpack-blocks.js';

// The hand-written HTTP/2 layer against clients nobody here wrote: nghttp2's command-line client (nghttp) and
// load generator (h2load), from Debian's nghttp2-client, and Python's h2 (python3-h2), each speaking HTTP/2 with
// prior knowledge to the gRPC port as a gRPC client would. Outside CI a test skips when its tool is missing; in
// CI (which installs them) it runs.

const PYTHON = '/usr/bin/python3';
const NGHTTP = '/usr/bin/nghttp';
const H2LOAD = '/usr/bin/h2load';
const CI = process.env.CI === 'true';
const skipUnless = (present: boolean, missing: string): string | false => (present || CI ? false : `${missing} (run in CI where it is installed)`);
const nghttpSkip = skipUnless(existsSync(NGHTTP), `${NGHTTP} is not installed (apt-get install nghttp2-client)`);
const h2loadSkip = skipUnless(existsSync(H2LOAD), `${H2LOAD} is not installed (apt-get install nghttp2-client)`);
const h2Skip = skipUnless(spawnSync(PYTHON, ['-c', 'import h2'], { encoding: 'utf8' }).status === 0, 'python3-h2 is not installed (apt-get install python3-h2)');

const LIVE = '/inference.GRPCInferenceService/ServerLive';
const METADATA = '/inference.GRPCInferenceService/ServerMetadata';

let s: GrpcTestServer;
let dir: string;
/** A gRPC message holding an empty request: what ServerLive and ServerMetadata take. */
let emptyRequest: string;

before(async () => {
  s = await startGrpcTestServer({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit' });
  dir = mkdtempSync(join(tmpdir(), 'nereid-h2-interop-'));
  emptyRequest = join(dir, 'empty.bin');
  writeFileSync(emptyRequest, Buffer.alloc(5));
});

after(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a tool without blocking the event loop (the server answering it lives in this process). */
function run(file: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { encoding: 'utf8', timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : -1, stdout, stderr });
    });
  });
}

const url = (path: string): string => `http://127.0.0.1:${s.grpc.port}${path}`;
const GRPC_HEADERS = ['-H', 'content-type: application/grpc', '-H', 'te: trailers'];

test('nghttp: a gRPC call over prior-knowledge HTTP/2: SETTINGS acknowledged, :status 200, the message, grpc-status 0 trailers', { skip: nghttpSkip }, async () => {
  const r = await run(NGHTTP, ['-v', '-n', '-d', emptyRequest, ...GRPC_HEADERS, url(METADATA)]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const out = r.stdout;
  assert.match(out, /recv SETTINGS frame <length=\d+, flags=0x00, stream_id=0>/);
  assert.match(out, /recv SETTINGS frame <length=0, flags=0x01, stream_id=0>/);
  assert.match(out, /recv \(stream_id=13\) :status: 200/);
  assert.match(out, /recv \(stream_id=13\) content-type: application\/grpc/);
  assert.match(out, /recv DATA frame <length=\d+, flags=0x00, stream_id=13>/);
  assert.match(out, /recv \(stream_id=13\) grpc-status: 0/);
  // nghttp opens its dependency tree with PRIORITY frames on idle streams first: accepted, nothing reset or refused.
  assert.match(out, /send PRIORITY frame <length=5, flags=0x00, stream_id=3>/);
  assert.doesNotMatch(out, /recv (RST_STREAM|GOAWAY)/);
});

test('h2load: 2000 calls on 4 connections, 16 streams at a time each, all succeed', { skip: h2loadSkip }, async () => {
  const r = await run(H2LOAD, ['-n', '2000', '-c', '4', '-m', '16', '-d', emptyRequest, ...GRPC_HEADERS, url(LIVE)]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout/, r.stdout);
  assert.match(r.stdout, /status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx/, r.stdout);
});

test('Python h2: eight streams at once, bodies larger than the server\'s windows sent as it credits them, a PING, every call answered', { skip: h2Skip }, async () => {
  const r = await run(PYTHON, [join(ROOT, 'test', 'frontends', 'grpc', 'python', 'h2_client.py'), String(s.grpc.port)]);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  const result = JSON.parse(r.stdout) as { streams: Record<string, { headers: Record<string, string>; data: string; trailers: Record<string, string> }>; ping: boolean; window_updates: number };
  assert.equal(result.ping, true);
  assert.deepEqual(Object.keys(result.streams).sort((a, b) => Number(a) - Number(b)), ['1', '3', '5', '7', '9', '11', '13', '15']);
  for (const [id, st] of Object.entries(result.streams)) {
    assert.equal(st.headers[':status'], '200', id);
    assert.equal(st.trailers['grpc-status'], '0', id);
    // ServerLiveResponse { live: true }: one message of two octets, field 1 = 1.
    assert.equal(st.data, '00000000020801', id);
  }
  // The four large bodies (4 x 200 kB) are more than the server's initial windows: it credited them as it read.
  assert.ok(result.window_updates > 0, 'the server sent WINDOW_UPDATEs');
});

test('Python\'s hpack encoder: 2000 blocks in sequences sharing a dynamic table decode to the fields it encoded', { skip: h2Skip }, async () => {
  const r = await run(PYTHON, [join(ROOT, 'test', 'frontends', 'grpc', 'python', 'hpack_blocks.py'), '36', '200']);
  assert.equal(r.code, 0, r.stderr);
  const sequences = JSON.parse(r.stdout) as Array<Array<{ hex: string; fields: Array<[string, string]> }>>;
  for (const [i, sequence] of sequences.entries()) {
    const decoder = new HeaderDecoder();
    for (const [j, b] of sequence.entries()) {
      const block = Buffer.from(b.hex, 'hex');
      const fields: Array<[string, string]> = [];
      decoder.decode(block, Infinity, (name, value) => fields.push([name, value]));
      assert.deepEqual(fields, b.fields, `sequence ${i}, block ${j}: ${b.hex}`);
    }
  }
  assert.equal(sequences.length, 200);
});

/** Runs `script` with `input` on its standard input; resolves with its output. */
function pipe(script: string, input: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(PYTHON, [script]);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

test('differential HPACK fuzz: random block sequences decode to the same fields, or are refused, by Nereid and Python\'s hpack', { skip: h2Skip }, async () => {
  const seed = fuzzSeed(36_7542);
  const rng = seeded(seed);
  // Sequences of up to ten random blocks sharing a table (indices in and past it, literals, size updates), some mutated.
  const sequences = Array.from({ length: fuzzCases(600) }, () => Array.from({ length: 1 + int(rng, 10) }, () => {
    const b = randomBlock(rng);
    if (chance(rng, 0.2) && b.length > 0) b[int(rng, b.length)] = int(rng, 256);
    return b.toString('hex');
  }));
  const r = await pipe(join(ROOT, 'test', 'frontends', 'grpc', 'python', 'hpack_decode.py'), JSON.stringify(sequences));
  assert.equal(r.code, 0, r.stderr);
  const reference = JSON.parse(r.stdout) as Array<Array<{ ok?: Array<[string, string]>; err?: string }>>;
  const counts = { decoded: 0, refused: 0 };
  for (const [i, sequence] of sequences.entries()) {
    const decoder = new HeaderDecoder();
    for (const [j, hex] of sequence.entries()) {
      const fields: Array<[string, string]> = [];
      let refused = false;
      try {
        decoder.decode(Buffer.from(hex, 'hex'), Infinity, (name, value) => fields.push([name, value]));
      } catch (e) {
        if (!(e instanceof CompressionError)) throw e;
        refused = true;
      }
      const py = reference[i]![j]!;
      const where = `seed ${seed}, sequence ${i}, block ${j} (${hex.slice(0, 200)})`;
      assert.equal(refused, py.err !== undefined, `${where}: Nereid ${refused ? 'refused it' : 'decoded it'}, Python ${py.err ?? 'decoded it'}`);
      if (refused) {
        counts.refused++;
        break;
      }
      assert.deepEqual(fields, py.ok, where);
      counts.decoded++;
    }
  }
  assert.ok(counts.decoded > 200 && counts.refused > 100, JSON.stringify(counts));
});
