import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { tempRepository } from '../../helpers/server.js';
import { serveWithInstanceSpy } from '../../helpers/instance-spy.js';

// A gateway instance holds nothing of its model in the server's process (BackendInstance.memory): the engine
// runs elsewhere, so it reports 0 bytes, external, whatever the engine holds.

test('a gateway instance reports 0 bytes, external', async () => {
  const engine = createServer((req, res) => {
    req.resume();
    res.end('ok');
  });
  await new Promise<void>((r) => engine.listen(0, '127.0.0.1', () => r()));
  const repo = await tempRepository([]);
  await mkdir(join(repo.dir, 'gw', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'gw', 'config.pbtxt'), `name: "gw"
backend: "openai"
max_batch_size: 0
parameters { key: "base_url" value { string_value: "http://127.0.0.1:${(engine.address() as { port: number }).port}" } }
instance_group [ { count: 2 kind: KIND_CPU } ]
`);
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir] }, ['openai']);
  try {
    const instances = s.instances('gw');
    assert.equal(instances.length, 2);
    for (const { instance } of instances) assert.deepEqual(instance.memory?.(), { bytes: 0, external: true });
  } finally {
    await s.close();
    await repo.remove();
    engine.close();
  }
});
