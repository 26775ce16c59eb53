#!/usr/bin/env node
// Screenshots of each view of the web console for docs/console.md, and the page's weight on first load.
// Starts `nereid serve` on the example repository (loopback, free ports) with summaries for p50/p99 and
// tracing on, sends it some traffic, and drives Debian's chromium through playwright-core.
//
//   npm run build && node scripts/console-screenshots.mjs [--out docs/images]
//
// Prints "page weight: <KB> KB in <n> files" (the bytes the browser received for the first load of the
// models view, headers excluded).
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const out = process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1] : join(ROOT, 'docs', 'images');
const traceFile = join(tmpdir(), `nereid-console-screenshots-${process.pid}.json`);

async function startServer() {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', '--model-repository', 'examples/model_repository',
    '--model-control-mode=explicit', '--load-model=simple', '--load-model=simple_string', '--load-model=digits_pipeline',
    '--http-address=127.0.0.1', '--http-port=0', '--allow-grpc=false', '--allow-metrics=true', '--metrics-port=0',
    '--metrics-config=summary_latencies=true', '--trace-config=level=TIMESTAMPS', '--trace-config=rate=20', `--trace-config=triton,file=${traceFile}`],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const read = (b) => {
      log += b.toString();
      const m = /Console at (http:\/\/[^/]+)\/console\//.exec(log);
      if (m) resolve(m[1]);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => reject(new Error(`nereid exited with ${code}:\n${log}`)));
  });
  return { child, url };
}

/** Requests to simple and to the digits ensemble until `stop()`; a few malformed ones to show failures. */
function traffic(url) {
  let on = true;
  const data = Array.from({ length: 16 }, (_, i) => i);
  const simple = { inputs: ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'INT32', shape: [1, 16], data })) };
  const digits = { inputs: [{ name: 'IMAGE', datatype: 'UINT8', shape: [1, 64], data: Array.from({ length: 64 }, (_, i) => (i * 7) % 17) }] };
  const post = (model, body) => fetch(`${url}/v2/models/${model}/infer`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.arrayBuffer());
  const done = (async () => {
    for (let i = 0; on; i++) {
      await Promise.all([post('simple', simple), post('simple', simple), post('digits_pipeline', digits), i % 10 === 0 ? post('simple', { inputs: [] }) : null]);
      await new Promise((r) => setTimeout(r, 15));
    }
  })();
  return async () => {
    on = false;
    await done;
  };
}

async function main() {
  mkdirSync(out, { recursive: true });
  const { child, url } = await startServer();
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
  const stop = traffic(url);
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    let bytes = 0;
    let files = 0;
    cdp.on('Network.loadingFinished', (e) => {
      bytes += e.encodedDataLength;
      files++;
    });
    page.on('dialog', (d) => void d.accept());
    await page.goto(`${url}/console/`);
    await page.getByRole('cell', { name: 'READY' }).first().waitFor();
    await page.waitForLoadState('networkidle');
    console.log(`page weight: ${(bytes / 1024).toFixed(1)} KB in ${files} files (with response headers)`);
    const shot = (name, fullPage = true) => page.screenshot({ path: join(out, `console-${name}.png`), fullPage });
    await shot('models');
    await page.getByRole('link', { name: 'simple', exact: true }).click();
    await page.getByLabel('Configuration of simple').waitFor();
    await shot('model');
    await page.getByRole('link', { name: 'Traffic' }).click();
    await page.waitForTimeout(14_000);
    await shot('traffic');
    await page.goto(`${url}/console/#try/simple`);
    await page.getByLabel('Values of INPUT0').fill(JSON.stringify(Array.from({ length: 16 }, (_, i) => i)));
    await page.getByLabel('Values of INPUT1').fill(Array(16).fill(1).join(', '));
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByLabel('curl command').waitFor();
    await shot('try');
    await fetch(`${url}/v2/repository/models/tiny_llm/load`, { method: 'POST' });
    await page.goto(`${url}/console/#try/tiny_llm`);
    await page.getByLabel('Message').fill('Tell me a story.');
    await page.getByLabel('Max tokens').fill('24');
    await page.getByRole('button', { name: 'Send message' }).click();
    await page.locator('#chat-figures').filter({ hasText: /finish reason/ }).waitFor();
    await shot('chat');
    await page.goto(`${url}/console/#traces/digits_pipeline`);
    await page.locator('.timeline').first().waitFor();
    await shot('traces', false);
    await page.getByRole('link', { name: 'Server' }).click();
    await page.getByRole('table', { name: /^Flags given/ }).waitFor();
    await shot('server');
  } finally {
    await stop();
    await browser.close();
    child.kill('SIGTERM');
    rmSync(traceFile, { force: true });
  }
}

await main();
