#!/usr/bin/env node
import { main } from '../dist/src/cli/main.js';

// Exit explicitly: after --exit-timeout-secs, work may still be running in worker threads, and tritonserver
// exits then too. Output is written synchronously (pipes and files) before main() returns.
process.exit(await main(process.argv.slice(2)));
