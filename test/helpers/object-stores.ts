import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type AddressInfo, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import assert from 'node:assert/strict';
import { ROOT } from './paths.js';

/**
 * Real storage servers for the repository tests, each in a child process on a free loopback port, so that a
 * test can kill one mid-download and start it again on the same port and data.
 */
export interface StoreProcess {
  readonly port: number;
  readonly child: ChildProcess;
  kill(): Promise<void>;
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

/** Runs node with `args` from the project's folder until it prints `ready`. */
async function startNode(args: string[], ready: string, port: number): Promise<StoreProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (b: Buffer): void => {
      out += b.toString();
      if (out.includes(ready)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`storage server exited with ${code}:\n${out}`)));
  });
  return {
    port, child,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export const S3_KEY = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** s3rver, an S3-compatible server, keeping its objects in `dir`. */
export function startS3rver(dir: string, port: number, buckets: string[]): Promise<StoreProcess> {
  return startNode(['--input-type=module', '-e', `
    import S3rver from 's3rver';
    const s = new S3rver({ port: ${port}, address: '127.0.0.1', silent: true, directory: ${JSON.stringify(dir)},
      configureBuckets: ${JSON.stringify(buckets.map((name) => ({ name })))} });
    await s.run();
    console.log('READY');
  `], 'READY', port);
}

export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

/** Azurite's blob service, keeping its data in `dir`. */
export function startAzurite(dir: string, port: number, extra: string[] = []): Promise<StoreProcess> {
  return startNode([join(ROOT, 'node_modules', 'azurite', 'dist', 'src', 'blob', 'main.js'), '--blobHost', '127.0.0.1', '--blobPort', String(port),
    '--location', dir, '--skipApiVersionCheck', '--loose', ...extra], 'successfully listens', port);
}

/** Every file under `dir`, as [key relative to dir with '/', absolute path]. */
export async function filesUnder(dir: string): Promise<[string, string][]> {
  const out: [string, string][] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const abs = join(e.parentPath, e.name);
    out.push([relative(dir, abs).split(sep).join('/'), abs]);
  }
  return out;
}

export async function fileBytes(path: string): Promise<Buffer> {
  return readFile(path);
}

/**
 * A TCP relay to a store that, once `stallAfter` bytes of one response passed, stops relaying that connection's
 * bytes and calls `onStall`: the test then kills the store while a download is half done. When `onStall`
 * returns 'drop', the relay closes that connection instead, as a network dropping it mid-download would.
 */
export async function startStallingProxy(target: number, stallAfter: number, onStall: () => void | 'drop'): Promise<{ port: number; requests: string[]; close(): Promise<void> }> {
  /** The request lines relayed ("GET /bucket/key?… "), in order, for tests that count what a client asked. */
  const requests: string[] = [];
  let stalled = false;
  // The connection that passed the mark: what the store sends on it from then on is dropped, not relayed.
  const held = new Set<Socket>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    let seen = 0;
    upstream.on('data', (b: Buffer) => {
      seen += b.length;
      if (!stalled && seen > stallAfter) {
        stalled = true;
        held.add(upstream);
        if (onStall() === 'drop') {
          client.destroy();
          upstream.destroy();
        }
      }
      if (!held.has(upstream)) client.write(b);
    });
    client.on('data', (b: Buffer) => {
      for (const m of b.toString('latin1').matchAll(/^(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP\/1\.1\r$/gm)) requests.push(`${m[1]} ${m[2]}`);
      upstream.write(b);
    });
    const end = () => { client.destroy(); upstream.destroy(); };
    upstream.on('end', end).on('close', end).on('error', end);
    client.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The files of the example model `simple` renamed `name`: [path under the model folder, bytes] pairs. */
export async function simpleModelFiles(examples: string, name: string): Promise<[string, Buffer][]> {
  const out: [string, Buffer][] = [];
  for (const [rel, abs] of await filesUnder(join(examples, 'simple'))) {
    const body = await readFile(abs);
    out.push([rel, rel === 'config.pbtxt' ? Buffer.from(body.toString().replace('name: "simple"', `name: "${name}"`)) : body]);
  }
  return out;
}

/** The HTTP status of one inference on a `simple`-like model (optionally a given version). */
export async function inferSimpleStatus(url: string, model: string, version?: number): Promise<number> {
  const data = Array.from({ length: 16 }, (_, i) => i);
  const path = version === undefined ? model : `${model}/versions/${version}`;
  const r = await fetch(`${url}/v2/models/${path}/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data }] }),
  });
  await r.arrayBuffer();
  return r.status;
}

/**
 * Poll mode with the store gone: `model`, loaded from the store through `relay`, is inferred, the relay closed
 * (the store unreachable), the repository polled, and the model must still serve and stay ready.
 */
export async function assertServesWithStoreDown(
  server: { url: string; server: { pollRepository(): Promise<unknown> } }, relay: { close(): Promise<void> }, model: string,
): Promise<void> {
  assert.equal(await inferSimpleStatus(server.url, model), 200);
  await relay.close();
  await server.server.pollRepository().catch(() => undefined);
  assert.equal(await inferSimpleStatus(server.url, model), 200, 'still serving');
  const ready = await fetch(`${server.url}/v2/models/${model}/ready`);
  await ready.arrayBuffer();
  assert.equal(ready.status, 200, 'still ready');
}
