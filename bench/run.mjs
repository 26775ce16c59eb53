#!/usr/bin/env node
// `npm run bench` (after the build): the HTTP suite, bench/http.mjs; arguments pass through
// (`npm run bench -- --quick`). A benchmark's name first runs that one instead, bench/<name>.mjs, with the
// arguments after it (`npm run bench -- stall --quick`, `npm run bench -- grpc --rounds 3`).
import { existsSync } from 'node:fs';

const name = process.argv[2];
if (name !== undefined && !name.startsWith('-')) {
  if (!/^[a-z][a-z0-9-]*$/.test(name) || name === 'run' || !existsSync(new URL(`./${name}.mjs`, import.meta.url))) {
    console.error(`no benchmark bench/${name}.mjs`);
    process.exit(2);
  }
  process.argv.splice(2, 1);
  await import(`./${name}.mjs`);
} else {
  await import('./http.mjs');
}
