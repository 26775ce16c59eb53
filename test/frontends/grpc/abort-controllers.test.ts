import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AbortControllers } from '../../../src/frontends/grpc/abort-controllers.js';

test('a controller given back unused is taken again; an aborted one, or one still listened to, never is', () => {
  const pool = new AbortControllers(2);
  const a = pool.take();
  pool.giveBack(a);
  assert.equal(pool.take(), a, 'unused: used again');

  const aborted = pool.take();
  aborted.abort();
  pool.giveBack(aborted);
  assert.notEqual(pool.take(), aborted);

  const listened = pool.take();
  const listener = (): void => {};
  listened.signal.addEventListener('abort', listener);
  pool.giveBack(listened);
  assert.notEqual(pool.take(), listened, 'a listener still attached: dropped');
  listened.signal.removeEventListener('abort', listener);

  // At most `max` wait to be used again.
  const [x, y, z] = [new AbortController(), new AbortController(), new AbortController()];
  for (const c of [x, y, z]) pool.giveBack(c);
  assert.deepEqual([pool.take(), pool.take()], [y, x]);
  const fresh = pool.take();
  assert.ok(fresh !== z && !fresh.signal.aborted);
});
