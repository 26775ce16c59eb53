import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLAG_TABLE_BEGIN, FLAG_TABLE_END, flagTable } from '../../src/cli/flag-table.js';
import { FLAG_EFFECTS } from '../../src/cli/flags.js';
import { ROOT } from '../helpers/paths.js';

// docs/flags.md's table of flags is the one scripts/flag-table.mjs writes from the flag definitions.

test('the flag table has one row per flag, each implemented, warning or refused', () => {
  const rows = flagTable().split('\n').slice(2);
  assert.equal(rows.length, FLAG_EFFECTS.length);
  for (const row of rows) assert.match(row, /\| (implemented|warns, no effect|refused \(exit 2\)) \|/);
});

test('docs/flags.md holds exactly the generated flag table between its markers', () => {
  const page = readFileSync(join(ROOT, 'docs', 'flags.md'), 'utf8');
  const begin = page.indexOf(FLAG_TABLE_BEGIN);
  const end = page.indexOf(FLAG_TABLE_END);
  assert.ok(begin >= 0 && end > begin, `docs/flags.md has no ${FLAG_TABLE_BEGIN} … ${FLAG_TABLE_END} section: put the two markers where the table goes`);
  const inPage = page.slice(begin + FLAG_TABLE_BEGIN.length, end).trim();
  assert.equal(inPage, flagTable(), "docs/flags.md's flag table is not the generated one: run 'npm run build && node scripts/flag-table.mjs'");
});
