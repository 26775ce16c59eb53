import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, truncateSync } from 'node:fs';
import { SharedMemoryRegistry, SHM_DISABLED, type OpenMemory } from '../../src/sharedmemory/registry.js';
import { FileMemory } from '../../src/sharedmemory/file-memory.js';
import { MappedMemory } from '../../src/sharedmemory/mapped-memory.js';
import { nativeShm, nativeShmMissing } from '../../src/sharedmemory/native.js';
import { createShmObject } from '../helpers/shm.js';

const objects: { remove(): void }[] = [];
after(() => objects.forEach((o) => o.remove()));
const object = (bytes: number | Uint8Array) => {
  const o = createShmObject(bytes);
  objects.push(o);
  return o;
};

const rejects = (f: () => unknown, code: string, message: RegExp) =>
  assert.throws(f, (e: { code: string; message: string }) => e.code === code && message.test(e.message));

test('the mmap addon is built here (npm install builds it; CI must not silently test only the fallback)', () => {
  assert.ok(nativeShm, `addon missing: ${nativeShmMissing}`);
});

const kinds: [string, OpenMemory][] = [['file', (k, o, b) => FileMemory.open(k, o, b)]];
if (nativeShm) kinds.unshift(['mmap', (k, o, b) => MappedMemory.open(nativeShm!, k, o, b)]);

for (const [kind, open] of kinds) {
  test(`${kind}: a region is [offset, offset + byte_size) of its object; tensor offsets are relative to it`, () => {
    const o = object(Buffer.from(Array.from({ length: 64 }, (_, i) => i)));
    const reg = new SharedMemoryRegistry(true, { open });
    reg.registerSystem('r', o.key, 10, 40);
    assert.deepEqual(reg.systemStatus(), [{ name: 'r', key: o.key, offset: 10, byte_size: 40 }]);
    const r = reg.acquire('r');
    assert.equal(r.mapped, kind === 'mmap');
    assert.deepEqual([...r.read(0, 4)], [10, 11, 12, 13]);
    assert.deepEqual([...r.read(36, 4)], [46, 47, 48, 49]);
    r.write(2, Uint8Array.of(200, 201));
    assert.deepEqual([...readFileSync(o.path).subarray(11, 14)], [11, 200, 201]);
    reg.release(r);
    reg.unregisterSystem('r');
    assert.deepEqual(reg.systemStatus(), []);
  });

  test(`${kind}: register checks offset + byte_size against the object, names, keys and the reserved prefix`, () => {
    const o = object(64);
    const reg = new SharedMemoryRegistry(true, { open });
    rejects(() => reg.registerSystem('a', o.key, 0, 65), 'INVALID_ARG', /^failed to register shared memory region 'a': invalid args$/);
    rejects(() => reg.registerSystem('a', o.key, 1, 64), 'INVALID_ARG', /invalid args/);
    rejects(() => reg.registerSystem('a', o.key, 64, 1), 'INVALID_ARG', /invalid args/);
    rejects(() => reg.registerSystem('a', o.key, 0, 0), 'INVALID_ARG', /byte_size must be greater than 0/);
    rejects(() => reg.registerSystem('a', '/nereid_no_such_object', 0, 8), 'INTERNAL', /^Unable to open shared memory region: '\/nereid_no_such_object'$/);
    rejects(() => reg.registerSystem('a', '/../etc/passwd', 0, 8), 'INTERNAL', /Unable to open shared memory region/);
    rejects(() => reg.registerSystem('a', 'triton_python_backend_shm_region_x', 0, 8), 'INVALID_ARG',
      /^cannot register shared memory region 'a' with key 'triton_python_backend_shm_region_x' as the key contains the reserved prefix 'triton_python_backend_shm_region_'$/);
    reg.registerSystem('a', o.key, 0, 64);
    rejects(() => reg.registerSystem('a', o.key, 0, 8), 'ALREADY_EXISTS', /^shared memory region 'a' already in manager$/);
    reg.registerSystem('b', o.key, 8, 8); // an offset off the page boundary: mmap starts at the page and skips
    assert.equal(reg.systemStatus().length, 2);
    reg.close();
  });

  test(`${kind}: a tensor range is checked with Triton's messages, including past 2^64`, () => {
    const o = object(64);
    const reg = new SharedMemoryRegistry(true, { open });
    reg.registerSystem('r', o.key, 0, 64);
    const r = reg.acquire('r');
    r.check(0, 64);
    r.check(60, 4);
    rejects(() => r.check(64, 0), 'INVALID_ARG', /^Invalid offset for shared memory region: 'r'$/);
    rejects(() => r.check(2 ** 64 - 32, 4), 'INVALID_ARG', /Invalid offset for shared memory region/);
    rejects(() => r.check(60, 5), 'INVALID_ARG', /^Invalid offset \+ byte size for shared memory region: 'r'$/);
    rejects(() => r.check(32, 2 ** 64 - 32), 'INVALID_ARG', /^Integer overflow detected: byte_size \(\d+\) \+ offset \(32\) exceeds maximum value \(18446744073709551615\) for region 'r'$/);
    reg.release(r);
    reg.close();
  });

  test(`${kind}: a region in use is unregistered when its last user lets go, and stays usable until then`, () => {
    const o = object(64);
    const reg = new SharedMemoryRegistry(true, { open });
    reg.registerSystem('r', o.key, 0, 64);
    const a = reg.acquire('r');
    const view = a.read(0, 8);
    reg.unregisterSystem();
    assert.equal(reg.systemStatus().length, 1, 'still listed while in use');
    const b = reg.acquire('r');
    rejects(() => reg.registerSystem('r', o.key, 0, 8), 'ALREADY_EXISTS', /already in manager/);
    reg.release(a);
    assert.equal(reg.systemStatus('r').length, 1);
    reg.release(b);
    assert.deepEqual(reg.systemStatus(), []);
    rejects(() => reg.acquire('r'), 'NOT_FOUND', /^Unable to find shared memory region: 'r'$/);
    rejects(() => reg.systemStatus('r'), 'NOT_FOUND', /^Unable to find system shared memory region: 'r'$/);
    // A view kept past the unmap reads as empty instead of touching unmapped memory.
    if (kind === 'mmap') assert.equal(view.byteLength, 0);
    reg.registerSystem('r', o.key, 0, 8);
    reg.close();
  });
}

test('disabled: register and unregister answer UNSUPPORTED with Triton\'s message; status still answers', () => {
  const reg = new SharedMemoryRegistry(false);
  rejects(() => reg.registerSystem('r', '/x', 0, 8), 'UNSUPPORTED', /^Client shared memory is disabled\. Start the server with '--allow-client-shm=true' to enable\.$/);
  rejects(() => reg.unregisterSystem(), 'UNSUPPORTED', /Client shared memory is disabled/);
  rejects(() => reg.registerCuda('r'), 'UNSUPPORTED', /Client shared memory is disabled/);
  rejects(() => reg.unregisterCuda(), 'UNSUPPORTED', /Client shared memory is disabled/);
  assert.equal(SHM_DISABLED.startsWith('Client shared memory is disabled'), true);
  assert.deepEqual(reg.systemStatus(), []);
  assert.deepEqual(reg.cudaStatus(), []);
});

test('CUDA answers as a build without GPUs: register fails, status is empty, unregister succeeds', () => {
  const o = object(8);
  const reg = new SharedMemoryRegistry(true);
  rejects(() => reg.registerCuda('c'), 'INVALID_ARG', /^failed to register CUDA shared memory region: 'c', GPUs not supported$/);
  assert.deepEqual(reg.cudaStatus(), []);
  rejects(() => reg.cudaStatus('c'), 'NOT_FOUND', /^Unable to find cuda shared memory region: 'c'$/);
  reg.registerSystem('s', o.key, 0, 8);
  rejects(() => reg.cudaStatus('s'), 'NOT_FOUND', /registered as system shared memory, not CUDA shared memory/);
  reg.unregisterCuda();
  assert.equal(reg.systemStatus().length, 1, 'CUDA unregister-all leaves system regions alone');
  reg.close();
});

for (const [kind, open] of kinds) {
  test(`${kind}: an object shrunk under its region faults nothing: reads give zeros, writes are dropped, the region says so`, () => {
    const page = nativeShm?.pageSize ?? 4096;
    const o = object(Buffer.alloc(2 * page, 7));
    const reg = new SharedMemoryRegistry(true, { open });
    reg.registerSystem('r', o.key, 0, 2 * page);
    const r = reg.acquire('r');
    r.checkIntact();
    truncateSync(o.path, page / 2);
    // Past the new end (a SIGBUS through a mapping), and inside it (the whole mapping is given up once one page faults).
    const tail = r.read(page, 16);
    assert.deepEqual([...tail], new Array(16).fill(0));
    r.write(page + 8, Uint8Array.of(1, 2, 3));
    rejects(() => r.checkIntact(), 'INVALID_ARG', /^shared memory region 'r' is smaller than registered: its object '.*' no longer holds \d+ bytes from offset 0/);
    assert.equal(readFileSync(o.path).byteLength, page / 2, 'a dropped write does not grow the object back');
    reg.release(r);
    reg.close();
  });
}
