import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { startTestServer, tempRepository } from '../../helpers/server.js';
import type { Tensor } from '../../../src/index.js';

// A gateway model reloaded with another base_url talks to the new engine: engines are shared by the instances
// of one load, not by every load of a model folder in the process.

/** An OpenAI-compatible engine that answers every completion with `text`. */
async function fakeEngine(text: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume();
    if (req.url === '/health') return res.end('ok');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ choices: [{ text, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

const config = (baseUrl: string): string => `name: "gw"
backend: "openai"
max_batch_size: 0
parameters { key: "base_url" value { string_value: "${baseUrl}" } }
instance_group [ { count: 2 kind: KIND_CPU } ]
`;

test('a gateway model reloaded with a new base_url sends its requests to the new engine', async () => {
  const [a, b] = [await fakeEngine('from A'), await fakeEngine('from B')];
  const repo = await tempRepository([]);
  await mkdir(join(repo.dir, 'gw', '1'), { recursive: true });
  await writeFile(join(repo.dir, 'gw', 'config.pbtxt'), config(a.url));
  const s = await startTestServer({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['gw'] });
  const ask = async (): Promise<string> => {
    const input: Tensor = { name: 'text_input', datatype: 'BYTES', shape: [1], data: [Buffer.from('hello')] };
    const r = await s.server.infer({ model: 'gw', inputs: [input] });
    return Buffer.from((r.outputs[0]!.data as Uint8Array[])[0]!).toString();
  };
  try {
    assert.equal(await ask(), 'from A');
    await writeFile(join(repo.dir, 'gw', 'config.pbtxt'), config(b.url));
    await s.server.loadModel('gw', {});
    assert.equal(await ask(), 'from B');
  } finally {
    await s.close();
    await repo.remove();
    a.server.close();
    b.server.close();
  }
});
