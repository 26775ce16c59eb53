// Prints the markdown table of every `nereid serve` flag and what it does in Nereid, from the flag definitions
// (src/cli/flags.ts), to paste into README.md between <!-- flags:begin --> and <!-- flags:end -->. Needs a build.
import { flagTable } from '../dist/src/cli/flag-table.js';

process.stdout.write(`${flagTable()}\n`);
