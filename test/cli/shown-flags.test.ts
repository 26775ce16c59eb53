import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shownFlags } from '../../src/cli/shown-flags.js';

test('shownFlags: given flags under their canonical names and in order, secrets hidden, then the defaults', () => {
  const flags = shownFlags(['--model-repo', 'models', '--cache-config=redis,password=hunter2', '--cache-config', 'redis,host=cache', '--grpc-restricted-protocol=health:token=abc', '--http-port=9']);
  const given = flags.filter((f) => f.given).map((f) => `${f.name}=${f.value}`);
  assert.deepEqual(given, ['model-repository=models', 'cache-config=redis,password=<hidden>', 'cache-config=redis,host=cache', 'grpc-restricted-protocol=health:token=<hidden>', 'http-port=9']);
  assert.doesNotMatch(JSON.stringify(flags), /hunter2|abc/);
  assert.deepEqual(flags.find((f) => f.name === 'grpc-port'), { name: 'grpc-port', value: '8001', given: false });
  assert.equal(new Set(flags.map((f) => f.name)).size, flags.length - 1, 'each flag once (cache-config given twice)');
});
