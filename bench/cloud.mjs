#!/usr/bin/env node
// Repositories in S3 against the same models on local disk: time to ready for 20 small models and for one
// 200 MB model, cold (empty download cache) and warm (a restart with the bucket unchanged); and Nereid's download
// throughput against a plain @aws-sdk/client-s3 GetObject loop over the same files, in the same run (in a fresh
// process as Nereid's, as many files at once as Nereid's pool). The store is s3rver on loopback, so both
// downloads are bound by s3rver: the ratio shows what Nereid adds, not a network.
// Runs rotate their order every round so drift on the machine hits each alike.
//
//   node bench/cloud.mjs [--rounds N] [--big-mb M] [--out FILE]
//   npm run bench -- cloud --rounds 3
//
// Goals (medians): download throughput >= 0.9x the plain loop; warm restart within 1.2x of local disk.

import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, mkdirSync, cpSync, readFileSync, writeFileSync, rmSync, readdirSync, statSync, openSync, writeSync, closeSync, createReadStream } from 'node:fs';
import { tmpdir, loadavg, cpus } from 'node:os';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import { pipeline } from 'node:stream/promises';
import { randomFillSync } from 'node:crypto';
import { S3Client, PutObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { ROOT, startServer, nereidArgs, nereidBuilt, freePort, killAll, commitName, median, fmt, pad, padEnd } from './servers.mjs';

const { values: a } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'big-mb': { type: 'string', default: '200' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (a.help) {
  process.stdout.write('usage: node bench/cloud.mjs [--rounds N] [--big-mb M] [--out FILE]\nsee bench/README.md\n');
  process.exit(0);
}
if (!nereidBuilt()) throw new Error('build first: npm run build');
const ROUNDS = Number(a.rounds);
const BIG = Number(a['big-mb']) * 1e6;
const KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
const BUCKET = 'bench';

const work = mkdtempSync(join(tmpdir(), 'nereid-bench-cloud-'));
const load0 = loadavg()[0];

function files(dir) {
  return readdirSync(dir, { recursive: true }).map((r) => join(dir, r)).filter((p) => statSync(p).isFile());
}

/** The example model `simple` as `name` in `repo`, with an extra file of `extraBytes` in its version folder. */
function addModel(repo, name, extraBytes = 0) {
  const dir = join(repo, name);
  cpSync(join(ROOT, 'examples', 'model_repository', 'simple'), dir, { recursive: true });
  const config = join(dir, 'config.pbtxt');
  writeFileSync(config, readFileSync(config, 'utf8').replace('name: "simple"', `name: "${name}"`));
  if (extraBytes > 0) {
    const fd = openSync(join(dir, '1', 'weights.bin'), 'w');
    const chunk = Buffer.alloc(4 * 1024 * 1024);
    for (let left = extraBytes; left > 0; left -= chunk.length) writeSync(fd, randomFillSync(chunk), 0, Math.min(chunk.length, left));
    closeSync(fd);
  }
}

async function startS3rver(port, dir) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', `
    import S3rver from 's3rver';
    await new S3rver({ port: ${port}, address: '127.0.0.1', silent: true, directory: ${JSON.stringify(dir)}, configureBuckets: [{ name: '${BUCKET}' }] }).run();
    console.log('READY');`], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    child.stdout.on('data', (b) => b.toString().includes('READY') && resolve());
    child.once('exit', (c) => reject(new Error(`s3rver exited ${c}`)));
  });
  return child;
}

const local = { small: join(work, 'local-small'), big: join(work, 'local-big') };
mkdirSync(local.small);
mkdirSync(local.big);
for (let i = 0; i < 20; i++) addModel(local.small, `m${String(i).padStart(2, '0')}`);
addModel(local.big, 'big', BIG);

const s3port = await freePort();
const s3rver = await startS3rver(s3port, join(work, 's3rver'));
const s3 = new S3Client({ region: 'us-east-1', endpoint: `http://127.0.0.1:${s3port}`, forcePathStyle: true, credentials: KEY, maxAttempts: 1, requestChecksumCalculation: 'WHEN_REQUIRED' });
const keys = { small: [], big: [] };
for (const kind of ['small', 'big']) {
  for (const f of files(local[kind])) {
    const key = `${kind}/${relative(local[kind], f)}`;
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: createReadStream(f), ContentLength: statSync(f).size }));
    keys[kind].push(key);
  }
}
const url = (kind) => `s3://127.0.0.1:${s3port}/${BUCKET}/${kind}`;
process.env.AWS_ACCESS_KEY_ID = KEY.accessKeyId;
process.env.AWS_SECRET_ACCESS_KEY = KEY.secretAccessKey;
process.env.AWS_EC2_METADATA_DISABLED = 'true';

/** Starts Nereid on `repository` to ready and stops it; the time to ready and its log. */
async function serve(repository, cacheDir) {
  const port = await freePort();
  const args = [...nereidArgs(repository, port), ...(cacheDir ? ['--repository-cache-dir', cacheDir] : [])];
  const s = await startServer('nereid', args, port, { timeoutMs: 600_000 });
  const log = s.log();
  await s.stop();
  return { readyMs: s.readyMs, log };
}

/** Seconds Nereid reported for downloading the model, from its log line. */
function downloadSecs(log) {
  const m = /downloaded \d+ file\(s\) of \S+, ([\d.]+) MB in ([\d.]+) s/.exec(log);
  return m ? Number(m[2]) : NaN;
}

/** Files Nereid downloads at once from a repository (CloudRepository's pool): the plain loop runs as many. */
const POOL = 8;

/**
 * The plain loop, in a fresh process as Nereid's download is: the SDK loaded and the client made first, then
 * (timed) GetObject of every key streamed to a file, POOL at once. Nereid's timing likewise starts with the
 * SDK loaded and pays the client's first request and a cold JIT. Resolves to the milliseconds taken.
 */
async function plainLoop(kind) {
  const dir = mkdtempSync(join(work, 'plain-'));
  const script = `
    import { createWriteStream } from 'node:fs';
    import { join } from 'node:path';
    import { pipeline } from 'node:stream/promises';
    import { S3Client, GetObjectCommand } from '@aws-sdk/client-s3';
    const s3 = new S3Client(${JSON.stringify({ region: 'us-east-1', endpoint: `http://127.0.0.1:${s3port}`, forcePathStyle: true, credentials: KEY, maxAttempts: 1 })});
    const queue = ${JSON.stringify(keys[kind])};
    const t0 = performance.now();
    const worker = async () => {
      for (let key = queue.shift(); key !== undefined; key = queue.shift()) {
        const r = await s3.send(new GetObjectCommand({ Bucket: ${JSON.stringify(BUCKET)}, Key: key }));
        await pipeline(r.Body, createWriteStream(join(${JSON.stringify(dir)}, key.replaceAll('/', '_'))));
      }
    };
    await Promise.all(Array.from({ length: ${POOL} }, worker));
    console.log('PLAIN_MS', performance.now() - t0);
    s3.destroy();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  const m = /PLAIN_MS ([\d.]+)/.exec(out);
  if (code !== 0 || !m) throw new Error(`the plain loop failed (exit ${code})`);
  return Number(m[1]);
}

const bigBytes = files(local.big).reduce((n, f) => n + statSync(f).size, 0);
const results = {};
const record = (k, v) => (results[k] ??= []).push(v);
const runs = {
  'local small': async () => record('local small', (await serve(local.small)).readyMs),
  'local big': async () => record('local big', (await serve(local.big)).readyMs),
  's3 small': async () => {
    const cache = mkdtempSync(join(work, 'cache-'));
    record('s3 small cold', (await serve(url('small'), cache)).readyMs);
    record('s3 small warm', (await serve(url('small'), cache)).readyMs);
    rmSync(cache, { recursive: true, force: true });
  },
  's3 big': async () => {
    const cache = mkdtempSync(join(work, 'cache-'));
    const cold = await serve(url('big'), cache);
    record('s3 big cold', cold.readyMs);
    record('nereid download MB/s', bigBytes / 1e6 / downloadSecs(cold.log));
    record('s3 big warm', (await serve(url('big'), cache)).readyMs);
    rmSync(cache, { recursive: true, force: true });
  },
  'plain loop': async () => record('plain GetObject MB/s', bigBytes / 1e6 / ((await plainLoop('big')) / 1000)),
};
const names = Object.keys(runs);
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < names.length; i++) await runs[names[(i + r) % names.length]]();
  }
} finally {
  s3.destroy();
  s3rver.kill('SIGKILL');
  killAll();
  rmSync(work, { recursive: true, force: true });
}

const med = (k) => median(results[k] ?? []);
const lines = [];
lines.push(`# cloud repositories (${commitName()}), ${ROUNDS} rounds, ${cpus().length} cores, load average ${load0.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
lines.push(`big model: ${(bigBytes / 1e6).toFixed(0)} MB; medians`);
lines.push('');
lines.push(`${padEnd('time to ready (ms)', 24)}${pad('local', 10)}${pad('s3 cold', 10)}${pad('s3 warm', 10)}${pad('warm/local', 12)}`);
for (const kind of ['small', 'big']) {
  const l = med(`local ${kind}`);
  const w = med(`s3 ${kind} warm`);
  lines.push(`${padEnd(kind === 'small' ? '20 small models' : 'one big model', 24)}${pad(fmt(l), 10)}${pad(fmt(med(`s3 ${kind} cold`)), 10)}${pad(fmt(w), 10)}${pad(fmt(w / l, 2) + 'x', 12)}`);
}
lines.push('');
const n = med('nereid download MB/s');
const p = med('plain GetObject MB/s');
lines.push(`download throughput (MB/s): nereid ${fmt(n, 1)}, plain GetObject loop ${fmt(p, 1)}, ratio ${fmt(n / p, 2)}x (goal >= 0.9x)`);
const text = lines.join('\n') + '\n';
process.stdout.write(text);
if (a.out) writeFileSync(a.out, text);
