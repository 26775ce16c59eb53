import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from './paths.js';

// llama.cpp's llama-server, the real engine the gateway tests talk to. scripts/run-tests.mjs builds it before
// any test file starts (under CI, or when asked); a test file only looks for it.

const { llamaServerPath } = (await import(join(ROOT, 'scripts', 'build-llama-server.mjs'))) as { llamaServerPath(): { bin: string } };

export const LLAMA_MODEL = join(EXAMPLES, 'tiny_llm', '1', 'model.gguf');

/** Where llama-server is, and why tests that need it skip: outside CI only; under CI=true they run and fail. */
export function llamaServer(): { bin: string; skip: string | false; missing: string | undefined } {
  const bin = llamaServerPath().bin;
  const missing = !existsSync(LLAMA_MODEL) ? `the tiny example LLM is missing (${LLAMA_MODEL}); run scripts/models/make_tiny_llm.py`
    : !existsSync(bin) ? 'llama-server is not built; `NEREID_BUILD_LLAMA_SERVER=1 npm test` or `node scripts/build-llama-server.mjs` builds it'
    : undefined;
  return { bin, missing, skip: missing && process.env.CI !== 'true' ? missing : false };
}
