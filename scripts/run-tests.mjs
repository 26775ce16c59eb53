// Runs every compiled test file (dist/test/**/*.test.js) with Node's test runner, which prints the pass/fail
// summary. Files run in parallel processes, two at a time to match a two-core machine.
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=2', ...files], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
