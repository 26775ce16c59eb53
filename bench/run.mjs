#!/usr/bin/env node
// `npm run bench` (after the build): every benchmark in bench/. Today that is the HTTP suite; arguments pass
// through (`npm run bench -- --quick`).
await import('./http.mjs');
