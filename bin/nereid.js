#!/usr/bin/env node
import { main } from '../dist/src/cli/main.js';
import { exitNow } from '../dist/src/cli/exit-now.js';

// Exit explicitly: after --exit-timeout-secs, work may still be running in worker threads, and tritonserver
// exits then too. Output is written synchronously (pipes and files) before main() returns. A failed run ends
// without stopping those threads (exit-now.ts); a clean one has none left.
const code = await main(process.argv.slice(2));
if (code !== 0) exitNow(code);
process.exit(code);
