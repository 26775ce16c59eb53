import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';

// llama.cpp has one log callback per process; its lines go to the server whose model is loading, not to
// whichever server started llama.cpp first.

async function serverLoggingTo(file: string, repository: string): Promise<InferenceServer> {
  const logger = createLogger({ info: false, warning: true, error: true, verbose: 0, format: 'default', file });
  return InferenceServer.create({ modelRepositories: [repository], modelControlMode: 'explicit' }, { logger });
}

test("llama.cpp's log goes to the server loading the model, not to the first server that used llama.cpp", async () => {
  const dir = await mkdtemp(join(tmpdir(), 'nereid-llama-log-'));
  const good = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm') }]);
  const bad = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm') }]);
  try {
    // The model cut short: its header reads, and llama.cpp logs why it cannot load the tensors as the load fails.
    const whole = await readFile(join(EXAMPLES, 'tiny_llm', '1', 'model.gguf'));
    await writeFile(join(bad.dir, 'tiny_llm', '1', 'broken.gguf'), whole.subarray(0, whole.length >> 1));
    const cfg = join(bad.dir, 'tiny_llm', 'config.pbtxt');
    await writeFile(cfg, `${await readFile(cfg, 'utf8')}\ndefault_model_filename: "broken.gguf"\n`);
    const first = await serverLoggingTo(join(dir, 'first.log'), good.dir);
    await first.loadModel('tiny_llm', {});
    await first.close();
    const second = await serverLoggingTo(join(dir, 'second.log'), bad.dir);
    try {
      await assert.rejects(second.loadModel('tiny_llm', {}));
    } finally {
      await second.close();
    }
    const firstLog = await readFile(join(dir, 'first.log'), 'utf8').catch(() => '');
    const secondLog = await readFile(join(dir, 'second.log'), 'utf8').catch(() => '');
    assert.doesNotMatch(firstLog, /llama\.cpp: /, firstLog);
    assert.match(secondLog, /llama\.cpp: /, secondLog);
  } finally {
    await good.remove();
    await bad.remove();
    await rm(dir, { recursive: true, force: true });
  }
});
