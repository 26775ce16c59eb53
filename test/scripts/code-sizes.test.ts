import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../helpers/paths.js';

// scripts/code-sizes.mjs measures classes and functions by matching braces over the source with comments,
// strings, templates and regular expressions blanked out. The goal it checks: no class over 400 lines and no
// function over 80 under src/, so that no hub grows back unnoticed.

interface Size {
  readonly kind: 'class' | 'function';
  readonly name: string;
  readonly lines: number;
}

const SCRIPT = join(ROOT, 'scripts', 'code-sizes.mjs');

test('no class under src/ is over 400 lines and no function over 80', () => {
  const r = spawnSync(process.execPath, [SCRIPT], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /no class over 400 lines, no function over 80/);
});

test('braces inside comments, strings, templates and regular expressions are not counted', async () => {
  const { sizes } = (await import(pathToFileURL(SCRIPT).href)) as { sizes(src: string): Size[] };
  const src = [
    'export class Box {',
    '  // a } in a comment',
    '  /* and { in a block comment */',
    "  private s = '}}';",
    '  private t = `${"{"} ${(() => { return 1; })()} }`;',
    '  private r = /[{}]+/g;',
    '  method(a: number): { x: number } {',
    '    if (a > 1) {',
    '      return { x: a / 2 };',
    '    }',
    '    return { x: 0 };',
    '  }',
    '}',
    'const arrow = (x: number): number => {',
    '  return x;',
    '};',
  ].join('\n');
  const found = sizes(src).map((s) => `${s.kind} ${s.name} ${s.lines}`).sort();
  assert.deepEqual(found, ['class Box 13', 'function (arrow) 1', 'function arrow 3', 'function method 6']);
});

test('a limit passed on the command line is applied, and what is over it is listed with its file and line', () => {
  const r = spawnSync(process.execPath, [SCRIPT, '--functions', '5', 'src/frontends/http/json-exact.ts'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^function +\d+ {2}read {2}src\/frontends\/http\/json-exact\.ts:\d+$/m);
});
