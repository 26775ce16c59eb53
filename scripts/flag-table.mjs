// Writes the markdown table of every `nereid serve` flag and what it does in Nereid, made from the flag
// definitions (src/cli/flags.ts), into docs/flags.md between <!-- flags:begin --> and <!-- flags:end -->.
// Needs a build. A test (test/cli/flag-table.test.ts) fails while the page holds another table.
import { readFileSync, writeFileSync } from 'node:fs';
import { FLAG_TABLE_BEGIN, FLAG_TABLE_END, flagTable } from '../dist/src/cli/flag-table.js';

const page = new URL('../docs/flags.md', import.meta.url);
const text = readFileSync(page, 'utf8');
const begin = text.indexOf(FLAG_TABLE_BEGIN);
const end = text.indexOf(FLAG_TABLE_END);
if (begin < 0 || end < begin) throw new Error(`docs/flags.md has no ${FLAG_TABLE_BEGIN} … ${FLAG_TABLE_END} section`);
writeFileSync(page, `${text.slice(0, begin + FLAG_TABLE_BEGIN.length)}\n${flagTable()}\n${text.slice(end)}`);
process.stdout.write('docs/flags.md: flag table written\n');
