import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/paths.js';

// No container engine runs on the test machines, so deploy/Dockerfile is not built here (the runtime tree its
// last stage copies is: test/scripts/runtime-tree.test.ts). What can be checked without building it is.

const dockerfile = readFileSync(join(ROOT, 'deploy', 'Dockerfile'), 'utf8');
const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));

/** Instructions with continuation lines joined, comments dropped. */
const instructions = dockerfile.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
const stages: string[][] = [];
for (const i of instructions) {
  if (/^FROM /i.test(i)) stages.push([]);
  stages.at(-1)?.push(i);
}

/** A path the build context leaves out, by the .dockerignore patterns used here (plain paths and **\/name). */
const excluded = (path: string): boolean => ignored.some((p) => p === path || path.startsWith(`${p}/`) || (p.startsWith('**/') && path.split('/').includes(p.slice(3))));

test('the build stage copies sources that exist and are in the build context', () => {
  const copies = stages[0]!.filter((i) => /^COPY /i.test(i) && !/--from=/.test(i));
  assert.ok(copies.length > 0);
  for (const c of copies) {
    const sources = c.split(/\s+/).slice(1, -1);
    for (const s of sources) {
      assert.ok(existsSync(join(ROOT, s)), `${s} does not exist`);
      assert.ok(!excluded(s), `${s} is left out of the build context by .dockerignore`);
    }
  }
  assert.ok(stages[0]!.some((i) => /^RUN npm ci\b/.test(i)), 'npm ci');
  assert.ok(stages[0]!.some((i) => /^RUN node scripts\/runtime-tree\.mjs --out \/opt\/nereid .*--examples/.test(i)), 'the runtime tree, examples by build argument');
});

test('the final stage: Node 20 slim, the runtime tree only, no compiler, a numeric non-root user, nereid as entrypoint', () => {
  assert.equal(stages.length, 2, 'two stages');
  assert.match(dockerfile, /^ARG NODE_IMAGE=node:20-slim$/m);
  const last = stages[1]!;
  assert.equal(last[0], 'FROM ${NODE_IMAGE}');
  assert.deepEqual(last.filter((i) => /^COPY /i.test(i)), ['COPY --from=build /opt/nereid /opt/nereid']);
  assert.ok(!last.some((i) => /\b(g\+\+|gcc|make|build-essential|npm (ci|install))\b/.test(i)), 'no compiler or npm install in the final stage');
  const user = last.find((i) => /^USER /.test(i));
  assert.match(user ?? '', /^USER [1-9]\d*:[1-9]\d*$/);
  assert.ok(last.indexOf(user!) > last.findIndex((i) => /^RUN ln -s \/opt\/nereid\/bin\/nereid\.js \/usr\/local\/bin\/nereid$/.test(i)), 'the link is made before dropping root');
  assert.ok(last.includes('ENTRYPOINT ["nereid"]'));
  for (const p of ['node_modules', 'dist', 'build', '.git', 'test']) assert.ok(excluded(p), `.dockerignore leaves ${p} in`);
});
