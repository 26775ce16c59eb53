// Runs every compiled test file (dist/test/**/*.test.js) with Node's test runner, which prints the pass/fail
// summary. Files run in parallel processes, two at a time to match a two-core machine.
//
// llama-server, the engine the LLM gateway tests talk to, is built first, in a step of its own, so that no test
// file waits for (or races) a build another file started. Under CI=true, or with NEREID_BUILD_LLAMA_SERVER=1,
// a missing binary is built (minutes, once per machine; cached, see scripts/build-llama-server.mjs); otherwise
// those tests skip, and under CI they fail when it is missing.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { buildLlamaServer, llamaServerPath } from './build-llama-server.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const testDir = join(root, 'dist', 'test');

function collect(dir, out) {
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) collect(p, out);
    else if (name.endsWith('.test.js')) out.push(relative(root, p));
  }
  return out;
}

const only = process.argv.slice(2);
const files = collect(testDir, []).filter((f) => only.length === 0 || only.some((o) => f.includes(o)));
if (files.length === 0) {
  console.error('no test files found under dist/test');
  process.exit(1);
}
/** Test files that run llama-server (see test/helpers/llama-server.ts). */
const NEEDS_LLAMA_SERVER = ['backends/openai/gateway.test.js', 'frontends/openai/gateway-model.test.js', 'frontends/openai/logprobs.test.js'];

function prepareLlamaServer() {
  let bin;
  try {
    bin = llamaServerPath().bin;
  } catch (e) {
    console.log(`llama-server: ${e.message}`);
    return;
  }
  if (existsSync(bin)) return;
  if (process.env.CI !== 'true' && process.env.NEREID_BUILD_LLAMA_SERVER !== '1') {
    console.log('llama-server is not built: the LLM gateway tests skip (NEREID_BUILD_LLAMA_SERVER=1 builds it, a few minutes once)');
    return;
  }
  try {
    buildLlamaServer((line) => console.log(line));
  } catch (e) {
    // The tests that need it fail under CI and say why; the rest still run.
    console.log(e.message);
  }
}

if (files.some((f) => NEEDS_LLAMA_SERVER.some((n) => f.endsWith(n)))) prepareLlamaServer();

const failures = join(mkdtempSync(join(tmpdir(), 'nereid-tests-')), 'failed.txt');
const reporters = [
  '--test-reporter=tap', '--test-reporter-destination=stdout',
  `--test-reporter=${join(root, 'scripts', 'failed-tests-reporter.mjs')}`, `--test-reporter-destination=${failures}`,
];
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...reporters, ...files], { cwd: root, stdio: 'inherit' });
const failed = existsSync(failures) ? readFileSync(failures, 'utf8') : '';
if (failed !== '') console.log(`\nfailed tests:\n${failed}`);
rmSync(join(failures, '..'), { recursive: true, force: true });
process.exit(r.status ?? 1);
