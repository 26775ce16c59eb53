#!/usr/bin/env node
// The client tools (perf, analyze) start without loading any of the server's modules.
const [command] = process.argv.slice(2);
const tools = { perf: ['perf.js', 'perfCommand'], analyze: ['analyze.js', 'analyzeCommand'] };
let code;
if (Object.hasOwn(tools, command)) {
  const [file, fn] = tools[command];
  code = await (await import(`../dist/src/cli/${file}`))[fn](process.argv.slice(3));
  process.exit(code);
}
const { main } = await import('../dist/src/cli/main.js');
const { exitNow } = await import('../dist/src/cli/exit-now.js');

// Exit explicitly: after --exit-timeout-secs, work may still be running in worker threads, and tritonserver
// exits then too. Output is written synchronously (pipes and files) before main() returns. A failed run ends
// without stopping those threads (exit-now.ts); a clean one has none left.
code = await main(process.argv.slice(2));
if (code !== 0) exitNow(code);
process.exit(code);
