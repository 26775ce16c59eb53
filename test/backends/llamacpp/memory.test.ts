import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES } from '../../helpers/paths.js';
import { tempRepository } from '../../helpers/server.js';
import { serveWithInstanceSpy } from '../../helpers/instance-spy.js';

// What a llama.cpp instance says it holds (BackendInstance.memory): its model's weights and its context's
// buffers (KV cache, output and compute buffers), in the server's process. With the example tiny_llm that is
// at least the GGUF file's size (its tensors, and a context far larger than they are), and a context made for
// smaller batches reports less than the same model with the example's. 0 once unloaded.

test('a llama.cpp instance reports its model and context, in process, and follows the context\'s size', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'tiny_llm') }, { from: join(EXAMPLES, 'tiny_llm'), name: 'small_batch' }]);
  const config = join(repo.dir, 'small_batch', 'config.pbtxt');
  const text = (await readFile(config, 'utf8')).replace('name: "tiny_llm"', 'name: "small_batch"');
  await writeFile(config, `${text}\nparameters { key: "batch_size" value { string_value: "16" } }\n`);
  const s = await serveWithInstanceSpy({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['tiny_llm', 'small_batch'] }, ['llamacpp']);
  try {
    const fileBytes = (await stat(join(repo.dir, 'tiny_llm', '1', 'model.gguf'))).size;
    const [example] = s.instances('tiny_llm');
    const [small] = s.instances('small_batch');
    const full = example!.instance.memory?.();
    const less = small!.instance.memory?.();
    assert.equal(full?.external, false);
    assert.ok(full.bytes >= fileBytes * 0.9, `${full.bytes} bytes against a file of ${fileBytes}`);
    assert.equal(less?.external, false);
    assert.ok(less.bytes >= fileBytes * 0.5 && less.bytes < full.bytes, `${less.bytes} against ${full.bytes}`);
    await s.server.unloadModel('small_batch');
    assert.deepEqual(small!.instance.memory?.(), { bytes: 0, external: false });
  } finally {
    await s.close();
    await repo.remove();
  }
});
