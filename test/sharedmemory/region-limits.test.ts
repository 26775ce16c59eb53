import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { EXAMPLES } from '../helpers/paths.js';
import { startTestServer, tempRepository, type TestServer } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { connect, failure, unary, type Client } from '../helpers/grpc.js';
import { createShmObject, int32Bytes } from '../helpers/shm.js';
import { startGrpcFrontend, type GrpcFrontend } from '../../src/frontends/grpc/server.js';
import { parseServeFlags, USAGE } from '../../src/cli/flags.js';

// The regions a client can make the server map are bounded: so many regions (--shm-max-regions), so many bytes
// mapped (--shm-max-mapped-bytes), counted in mappings the server holds, not in registrations. Past either, a
// registration is refused with RESOURCE_EXHAUSTED (HTTP 400), counted in nereid_limit_refusal_count{limit}.
// Before the limits, ~65,000 registrations of one small object used up the kernel's map count and aborted V8.

const PAGE = 4096;
let repo: { dir: string; remove(): Promise<void> };
let s: TestServer;
let g: GrpcFrontend;
let client: Client;
const objects: { remove(): void }[] = [];

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }]);
  // Options as flags make them: a variable, so that the test still compiles against a server without these limits.
  const options = { modelRepositories: [repo.dir], allowClientShm: true, shmMaxRegions: 3, shmMaxMappedBytes: 4 * PAGE, metrics: {} };
  s = await startTestServer(options);
  g = await startGrpcFrontend(s.server, { port: 0, address: '127.0.0.1' }, s.server.logger);
  client = connect(g.port);
});
after(async () => {
  client.close();
  await s.close();
  await g.close();
  await repo.remove();
  objects.forEach((o) => o.remove());
});

const register = (name: string, body: unknown) => postJson(`${s.url}/v2/systemsharedmemory/region/${name}/register`, body);
const unregisterAll = () => request(`${s.url}/v2/systemsharedmemory/unregister`, { method: 'POST' });

async function refusals(limit: string): Promise<number> {
  const m = new RegExp(`^nereid_limit_refusal_count\\{limit="${limit}"\\} (\\d+)$`, 'm').exec(await s.server.metricsText());
  return m ? Number(m[1]) : 0;
}

async function assertRegistered(name: string, body: unknown): Promise<void> {
  const r = await register(name, body);
  assert.equal(r.status, 200, `${name}: ${r.body.toString()}`);
}

test('flags: --shm-max-regions and --shm-max-mapped-bytes reach the server options, with defaults', () => {
  // Unset, the registry's defaults apply; --help documents them.
  const dflt = parseServeFlags(['--model-repository=/m']).server as { shmMaxRegions?: number; shmMaxMappedBytes?: number };
  assert.equal(dflt.shmMaxRegions, undefined);
  assert.equal(dflt.shmMaxMappedBytes, undefined);
  assert.match(USAGE, /--shm-max-regions <integer>[^]*Default: 4096/);
  assert.match(USAGE, /--shm-max-mapped-bytes <integer>[^]*Default: 68719476736 \(64 GiB\)/);
  const set = parseServeFlags(['--model-repository=/m', '--shm-max-regions=7', '--shm-max-mapped-bytes=1048576']).server as typeof dflt;
  assert.equal(set.shmMaxRegions, 7);
  assert.equal(set.shmMaxMappedBytes, 1048576);
  assert.throws(() => parseServeFlags(['--model-repository=/m', '--shm-max-regions=-1']));
});

test('the region count: the fourth mapping is refused, over HTTP and gRPC; unregistering frees its place', async () => {
  const o = createShmObject(PAGE);
  objects.push(o);
  const before = await refusals('shm-max-regions');
  for (const name of ['c1', 'c2', 'c3']) await assertRegistered(name, { key: o.key, byte_size: 16 });
  const r = await register('c4', { key: o.key, byte_size: 16 });
  assert.equal(r.status, 400);
  assert.match(r.json().error, /^failed to register shared memory region 'c4': .*--shm-max-regions=3/);
  const e = await failure(unary(client, 'SystemSharedMemoryRegister', { name: 'c4', key: o.key, offset: 0, byte_size: 16 }));
  assert.equal(e.code, grpc.status.RESOURCE_EXHAUSTED);
  assert.match(e.details, /--shm-max-regions=3/);
  assert.equal(await refusals('shm-max-regions'), before + 2);
  // Nothing of the refused registrations stays behind.
  const st = (await request(`${s.url}/v2/systemsharedmemory/status`)).json() as { name: string }[];
  assert.deepEqual(st.map((x) => x.name).sort(), ['c1', 'c2', 'c3']);

  assert.equal((await request(`${s.url}/v2/systemsharedmemory/region/c2/unregister`, { method: 'POST' })).status, 200);
  await assertRegistered('c4', { key: o.key, byte_size: 16 });
  assert.equal((await unregisterAll()).status, 200);
});

test('mapped bytes: whole pages are counted, the mapping that would go past the bound is refused', async () => {
  const o = createShmObject(4 * PAGE);
  objects.push(o);
  const before = await refusals('shm-max-mapped-bytes');
  await assertRegistered('b1', { key: o.key, byte_size: 3 * PAGE });
  // 100 bytes that straddle a page boundary map two pages: 5 pages in all, past the bound of 4.
  const straddle = await register('b2', { key: o.key, offset: PAGE - 50, byte_size: 100 });
  assert.equal(straddle.status, 400);
  assert.match(straddle.json().error, /^failed to register shared memory region 'b2': .*--shm-max-mapped-bytes=16384/);
  // 100 bytes inside one page map one: 4 pages, at the bound.
  await assertRegistered('b3', { key: o.key, offset: PAGE, byte_size: 100 });
  const over = await register('b4', { key: o.key, byte_size: 1 });
  assert.equal(over.status, 400);
  assert.match(over.json().error, /--shm-max-mapped-bytes=16384/);
  assert.equal(await refusals('shm-max-mapped-bytes'), before + 2);
  // A range past the end of its object is the client's mistake first: Triton's error, not a refusal by the limit.
  const past = await register('b5', { key: o.key, byte_size: 5 * PAGE });
  assert.equal(past.status, 400);
  assert.match(past.json().error, /^failed to register shared memory region 'b5': invalid args$/);
  assert.equal(await refusals('shm-max-mapped-bytes'), before + 2);

  assert.equal((await request(`${s.url}/v2/systemsharedmemory/region/b1/unregister`, { method: 'POST' })).status, 200);
  await assertRegistered('b4', { key: o.key, byte_size: 1 });
  assert.equal((await unregisterAll()).status, 200);
});

test('a region unregistered while a request holds it keeps its place until the request lets it go', async () => {
  const o = createShmObject(Buffer.concat([int32Bytes(new Array(16).fill(1)), Buffer.alloc(PAGE - 64)]));
  objects.push(o);
  for (const name of ['h1', 'h2', 'h3']) await assertRegistered(name, { key: o.key, byte_size: 64 });
  // What a request does with a region it names (deterministic here, rather than racing a slow model).
  const held = s.server.sharedMemory.acquire('h1');
  assert.equal((await request(`${s.url}/v2/systemsharedmemory/region/h1/unregister`, { method: 'POST' })).status, 200);
  const r = await register('h4', { key: o.key, byte_size: 64 });
  assert.equal(r.status, 400, 'h1 is still mapped');
  assert.match(r.json().error, /--shm-max-regions=3/);
  s.server.sharedMemory.release(held);
  await assertRegistered('h4', { key: o.key, byte_size: 64 });
  const infer = await postJson(`${s.url}/v2/models/simple/infer`, {
    inputs: [
      { name: 'INPUT0', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: 'h4', shared_memory_byte_size: 64 } },
      { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', parameters: { shared_memory_region: 'h2', shared_memory_byte_size: 64 } },
    ],
  });
  assert.equal(infer.status, 200, infer.body.toString());
  assert.deepEqual(infer.json().outputs[0].data, new Array(16).fill(2));
  assert.equal((await unregisterAll()).status, 200);
});
