import { createHash, randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { parseKeyFile } from '../frontends/api-keys.js';

const USAGE = `Usage: nereid keys add ID SCOPE... [LIMIT...] [--file FILE]

Makes a new API key, prints it once, and appends its line (ID SCOPES SHA256) to FILE, the file of
--api-keys-file (without --file the line is printed for you to place). The key itself is stored nowhere.
Scopes: health, metadata, inference, shared-memory, model-config, model-repository, statistics, trace,
logging, or *; a scope may be narrowed to model names (globs): inference:simple,digits*
Limits of the key's quota: rate=<n>/s (or /m), burst=<n> (default: one second's rate), concurrency=<n>
`;

/** Prefix of Nereid's keys, so that a key found in a log or a repository is recognised as one. */
const PREFIX = 'nrd_';

/** `nereid keys add`: returns the exit code. */
export function keysCommand(argv: readonly string[]): number {
  const args = [...argv];
  if (args[0] !== 'add') {
    process.stderr.write(USAGE);
    return args[0] === 'help' || args[0] === '--help' ? 0 : 2;
  }
  let file: string | undefined;
  const rest: string[] = [];
  for (let i = 1; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--file') file = args[++i];
    else if (a.startsWith('--file=')) file = a.slice('--file='.length);
    else rest.push(a);
  }
  const [id, ...more] = rest;
  const scopes = more.filter((a) => !a.includes('='));
  const limits = more.filter((a) => a.includes('='));
  if (id === undefined || scopes.length === 0 || file === '') {
    process.stderr.write(USAGE);
    return 2;
  }
  const key = PREFIX + randomBytes(32).toString('base64url');
  const line = `${[id, scopes.join(';'), createHash('sha256').update(key).digest('hex'), ...limits].join(' ')}\n`;
  try {
    // The new line is checked with the file it joins: a bad scope or an id already there is refused.
    const before = file !== undefined && existsSync(file) ? readFileSync(file, 'utf8') : '';
    parseKeyFile(`${before}${before === '' || before.endsWith('\n') ? '' : '\n'}${line}`);
    if (file !== undefined) appendFileSync(file, `${before === '' || before.endsWith('\n') ? '' : '\n'}${line}`, { mode: 0o600 });
  } catch (e) {
    process.stderr.write(`nereid keys: ${(e as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`${key}\n`);
  if (file === undefined) process.stdout.write(`# the line for the key file:\n${line}`);
  else process.stderr.write(`Key '${id}' added to ${file}; it is shown only this once.\n`);
  return 0;
}
