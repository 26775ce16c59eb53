import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLAG_TABLE_BEGIN, FLAG_TABLE_END, flagTable } from '../../src/cli/flag-table.js';
import { FLAG_EFFECTS } from '../../src/cli/flags.js';
import { ROOT } from '../helpers/paths.js';

// README.md's table of flags is the one scripts/flag-table.mjs prints from the flag definitions.

test('the flag table has one row per flag, each implemented, warning or refused', () => {
  const rows = flagTable().split('\n').slice(2);
  assert.equal(rows.length, FLAG_EFFECTS.length);
  for (const row of rows) assert.match(row, /\| (implemented|warns, no effect|refused \(exit 2\)) \|/);
});

test('README.md holds exactly the generated flag table between its markers', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const begin = readme.indexOf(FLAG_TABLE_BEGIN);
  const end = readme.indexOf(FLAG_TABLE_END);
  assert.ok(begin >= 0 && end > begin, `README.md has no ${FLAG_TABLE_BEGIN} … ${FLAG_TABLE_END} section: paste the output of 'node scripts/flag-table.mjs' between them`);
  const inReadme = readme.slice(begin + FLAG_TABLE_BEGIN.length, end).trim();
  assert.equal(inReadme, flagTable(), "README.md's flag table is not the generated one: run 'node scripts/flag-table.mjs' and paste its output");
});
