import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RouteCache, route } from '../../../src/frontends/http/routes.js';

test('route: model paths with versions and actions, percent-decoded names, and no match for the rest', () => {
  assert.deepEqual(route('/v2/models/simple/infer'), { kind: 'model', model: 'simple', version: undefined, action: 'infer' });
  assert.deepEqual(route('/v2/models/a%2Fb/versions/3/ready'), { kind: 'model', model: 'a/b', version: 3, action: 'ready' });
  assert.deepEqual(route('/v2/models/bad%zz'), { kind: 'model', model: 'bad%zz', version: undefined, action: 'metadata' });
  assert.equal(route('/v2/models/simple/versions/x/infer'), undefined);
  assert.equal(route('/v3/models'), undefined);
});

test('RouteCache: a path seen before gives the same frozen route; unknown paths are not kept; the cache is bounded', () => {
  const cache = new RouteCache(3);
  const first = cache.route('/v2/models/simple/infer');
  assert.ok(first !== undefined && Object.isFrozen(first));
  assert.equal(cache.route('/v2/models/simple/infer'), first);
  for (let i = 0; i < 10; i++) assert.equal(cache.route(`/nothing/${i}`), undefined);
  assert.equal(cache.route('/v2/models/simple/infer'), first, 'paths that route nowhere never pushed it out');
  // Past the bound the cache starts over: the routes stay correct, only new objects.
  for (const m of ['a', 'b', 'c']) assert.deepEqual(cache.route(`/v2/models/${m}/infer`), { kind: 'model', model: m, version: undefined, action: 'infer' });
  // A long path routes every time but is never kept: a client cannot fill the cache with long keys.
  const long = `/v2/models/${'m'.repeat(300)}/infer`;
  const first2 = cache.route(long);
  assert.equal(first2?.kind, 'model');
  assert.notEqual(cache.route(long), first2);
  const again = cache.route('/v2/models/simple/infer');
  assert.deepEqual(again, first);
  assert.notEqual(again, first);
});
