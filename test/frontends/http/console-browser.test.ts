import { after, before, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend, type HttpFrontend } from '../../../src/frontends/http/server.js';
import { createLogger } from '../../../src/observability/logger.js';
import { ApiKeys } from '../../../src/frontends/api-keys.js';
import { launchChromium, needChromium } from '../../helpers/browser.js';
import { EXAMPLES, FIXTURES } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { tempRepository } from '../../helpers/server.js';

// The console in Debian's chromium against a real server: one InferenceServer behind two HTTP ports, one open
// and one with the model-repository API restricted. The page must load with no error, list the models, and
// drive load and unload through the public API, by keyboard alone, with labelled controls; the restricted
// port's refusal reaches the operator in the API's own words.

// Warnings and errors go to a file: the server view shows the latest of them.
const logFile = join(tmpdir(), `nereid-console-test-${process.pid}.log`);
const keyFile = join(tmpdir(), `nereid-console-test-${process.pid}.keys`);
const traceFile = join(tmpdir(), `nereid-console-test-${process.pid}.trace.json`);
const logger = createLogger({ info: false, warning: true, error: true, verbose: 0, format: 'default', file: logFile });
let repo: Awaited<ReturnType<typeof tempRepository>>;
let server: InferenceServer;
let open: HttpFrontend;
let restricted: HttpFrontend;
let browser: Browser | undefined;
let keyed: HttpFrontend;
let keys: ApiKeys;
/** The API key of the keyed port: model metadata and the repository, not inference. */
const KEY = 'console-test-key-0123456789';

before(async () => {
  repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(FIXTURES, 'broken', 'bad_onnx') }, { from: join(EXAMPLES, 'tiny_llm') }]);
  // Tracing configured but off (level OFF) until the trace view turns it on.
  server = await InferenceServer.create({ modelRepositories: [repo.dir], modelControlMode: 'explicit', loadModels: ['simple'], trace: [`triton,file=${traceFile}`] }, { logger });
  const base = { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20, console: true };
  open = await startHttpFrontend(server, base, logger);
  restricted = await startHttpFrontend(server, { ...base, restricted: [{ categories: ['model-repository'], key: 'admin-key', value: 'secret' }] }, logger);
  await writeFile(keyFile, `reader metadata;model-repository ${createHash('sha256').update(KEY).digest('hex')}\n`);
  keys = new ApiKeys(keyFile, false, logger);
  keyed = await startHttpFrontend(server, { ...base, keys }, logger);
});

after(async () => {
  await browser?.close();
  await server.close(5);
  await open.close();
  await restricted.close();
  await keyed.close();
  keys.close();
  await rm(keyFile, { force: true });
  await repo.remove();
  await logger.close();
  await rm(logFile, { force: true });
  await rm(traceFile, { force: true });
});

const urlOf = (f: HttpFrontend): string => `http://127.0.0.1:${f.port}`;

interface Opened {
  readonly page: Page;
  readonly errors: string[];
  readonly foreign: string[];
}

/** The console of a port, with the page's errors and any request that leaves the server's origin recorded. */
async function openConsole(t: TestContext, f: HttpFrontend): Promise<Opened | undefined> {
  if (!needChromium(t)) return undefined;
  browser ??= await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  // Closed with its test: a page left open keeps polling.
  t.after(() => page.close());
  const errors: string[] = [];
  const foreign: string[] = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => !r.url().startsWith(urlOf(f)) && foreign.push(r.url()));
  // Confirmation dialogs are accepted, as an operator would.
  page.on('dialog', (d) => void d.accept());
  await page.goto(`${urlOf(f)}/console/`);
  return { page, errors, foreign };
}

function infer(): Promise<{ status: number; json(): any }> {
  const data = Array.from({ length: 16 }, (_, i) => i);
  return postJson(`${urlOf(open)}/v2/models/simple/infer`, {
    inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data }],
  });
}

/** Presses Tab until the focused element has this accessible name (aria-label or text); the names passed on the way. */
async function tabTo(page: Page, name: string, most = 40): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < most; i++) {
    await page.keyboard.press('Tab');
    const focused = (await page.evaluate('(() => { const e = document.activeElement; return e ? (e.getAttribute("aria-label") || e.textContent || "").trim() : ""; })()')) as string;
    seen.push(focused);
    if (focused === name) return seen;
  }
  assert.fail(`no focusable element named ${name} after ${most} tabs: ${seen.join(' | ')}`);
}

test('the console loads with no error and shows every model with its state, its metadata and its configuration', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('cell', { name: 'READY' }).waitFor();
  const row = page.getByRole('row', { name: /simple/ });
  assert.match(await row.innerText(), /simple\s+1\s+READY/);
  assert.equal(await page.getByRole('row', { name: /bad_onnx/ }).count(), 1);
  await page.getByRole('link', { name: 'simple' }).click();
  await page.getByRole('table', { name: 'Inputs' }).waitFor();
  assert.match(await page.getByRole('table', { name: 'Inputs' }).innerText(), /INPUT0\s+INT32\s+\[-1, 16\]/);
  const config = await page.getByLabel('Configuration of simple').innerText();
  assert.match(config, /^name: "simple"$/m);
  assert.match(config, /^\s+data_type: TYPE_INT32$/m);
  assert.match(config, /^max_batch_size: 8$/m);
  assert.match(await page.locator('main').innerText(), /onnxruntime_onnx/);
  assert.deepEqual(o.errors, []);
  assert.deepEqual(o.foreign, []);
});

test('by keyboard alone: unload in the console makes the model unavailable to a client, load brings it back', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('button', { name: 'Unload simple' }).waitFor();
  assert.equal((await infer()).status, 200);
  try {
    // The focus order: the views, the access panel, then the models' controls.
    const order = await tabTo(page, 'Unload simple');
    assert.deepEqual(order.slice(0, 7), ['Models', 'Traffic', 'Try a request', 'Traces', 'Server', 'Access', 'Refresh']);
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'simple unloaded.' }).waitFor();
    const refused = await infer();
    assert.notEqual(refused.status, 200);
    assert.match(refused.json().error, /simple/);
    await page.getByRole('button', { name: 'Load simple' }).waitFor();
    await tabTo(page, 'Load simple');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'simple loaded.' }).waitFor();
    assert.equal((await infer()).status, 200);
  } finally {
    // The later tests use simple: a failure here must not take it from them.
    if (!server.isModelReady('simple')) await server.loadModel('simple');
  }
  // The access fields are labelled.
  for (const label of ['Restricted-API header', 'Header value', 'API key (Bearer)']) assert.equal(await page.getByLabel(label).count(), 1, label);
  assert.deepEqual(o.errors, []);
});

test('a failed load shows the error the server gives', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('button', { name: 'Load bad_onnx' }).click();
  const status = page.getByRole('status');
  await status.filter({ hasText: 'Load bad_onnx failed: ' }).waitFor();
  const index = (await (await postJson(`${urlOf(open)}/v2/repository/index`, {})).json()) as { name: string; reason?: string }[];
  const reason = index.find((m) => m.name === 'bad_onnx')!.reason!;
  assert.ok(reason.length > 0);
  await page.getByRole('row', { name: /bad_onnx/ }).getByText(reason.slice(0, 40)).waitFor();
  assert.deepEqual(o.errors.filter((e) => !/Failed to load resource/.test(e)), []);
});

test('a restricted server refuses the console in the API\'s words; the header typed in the Access panel opens it', async (t) => {
  const o = await openConsole(t, restricted);
  if (!o) return;
  const { page } = o;
  const message = "This API is restricted, expecting header 'admin-key'";
  await page.getByText(`The repository index was refused: ${message}`).waitFor();
  await page.getByText('Access').click();
  await page.getByLabel('Restricted-API header').fill('admin-key');
  await page.getByLabel('Header value').fill('secret');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.getByRole('button', { name: 'Unload simple' }).waitFor();
  // Without the header, control is refused with the same message and the model stays.
  await page.getByLabel('Header value').fill('wrong');
  await page.getByRole('button', { name: 'Unload simple' }).click();
  await page.getByRole('status').filter({ hasText: `Unload simple failed: ${message}` }).waitFor();
  assert.equal((await infer()).status, 200);
});

/** Waits until a chart's highest plotted value is above zero. (The page's CSP forbids string evaluation.) */
async function chartMoves(page: Page, title: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  const figure = page.locator(`figure[data-title="${title}"]`);
  while (Number(await figure.getAttribute('data-max')) <= 0) {
    if (Date.now() > until) assert.fail(`the ${title} chart did not move in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test('the traffic charts move under load, from the statistics extension', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('link', { name: 'Traffic' }).click();
  const requests = page.locator('figure[data-title="Requests/s"]');
  await requests.waitFor();
  assert.equal(await requests.getAttribute('data-max'), '0', 'no traffic yet');
  // Requests until the page has seen them in two reads of the statistics (it reads every 2 s).
  let loading = true;
  const load = (async () => {
    let sent = 0;
    while (loading) {
      await Promise.all([infer(), infer(), infer(), infer()]);
      sent += 4;
    }
    return sent;
  })();
  try {
    await chartMoves(page, 'Requests/s');
  } finally {
    loading = false;
  }
  assert.ok((await load) > 0);
  assert.ok(Number(await page.locator('figure[data-title="Latency (ms)"]').getAttribute('data-max')) > 0);
  await page.getByLabel('Model').selectOption({ label: 'simple (version 1)' });
  await chartMoves(page, 'Requests/s');
  const row = page.getByRole('row', { name: /simple:1/ });
  assert.match(await row.innerText(), /simple:1\s+\d/);
  assert.equal(await page.locator('.uplot canvas').count(), 6);
  assert.deepEqual(o.errors, []);
  assert.deepEqual(o.foreign, []);
});

test('the try-a-request form answers what its curl command answers, and refuses values that do not fit', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('link', { name: 'Try a request' }).click();
  await page.getByLabel('Model').selectOption('simple');
  await page.getByLabel('Values of INPUT0').waitFor();
  assert.equal(await page.getByLabel('Shape of INPUT0').inputValue(), '1, 16');
  assert.equal(await page.getByLabel('Values of INPUT1').inputValue(), JSON.stringify(Array(16).fill(0)));
  // A wrong count is refused in the page, before any request.
  await page.getByLabel('Values of INPUT0').fill('1, 2, 3');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByText('INPUT0: 16 value(s) expected by the shape, 3 given').waitFor();
  await page.getByLabel('Values of INPUT0').fill(JSON.stringify(Array.from({ length: 16 }, (_, i) => i)));
  await page.getByLabel('Values of INPUT1').fill(Array(16).fill(3).join(', '));
  await page.getByRole('button', { name: 'Send' }).click();
  const answer = page.getByRole('table', { name: 'Response of simple version 1' });
  await answer.waitFor();
  const curl = await page.getByLabel('curl command').innerText();
  // Run as a reader would paste it (asynchronously: the server answering it runs in this process).
  const run = await promisify(execFile)('bash', ['-c', curl], { encoding: 'utf8', timeout: 30_000 });
  const byCurl = JSON.parse(run.stdout) as { outputs: { name: string; datatype: string; shape: number[]; data: number[] }[] };
  assert.deepEqual(byCurl.outputs.find((x) => x.name === 'OUTPUT0')!.data, Array.from({ length: 16 }, (_, i) => i + 3));
  for (const out of byCurl.outputs) {
    const row = answer.getByRole('row', { name: new RegExp(`^${out.name}\\b`) });
    assert.equal(await row.innerText(), [out.name, out.datatype, `[${out.shape.join(', ')}]`, out.data.join(', ')].join('\t'));
  }
  const python = await page.getByLabel('Python tritonclient code').innerText();
  assert.match(python, /httpclient\.InferInput\("INPUT0", \[1,16\], "INT32"\)/);
  assert.match(python, /result = client\.infer\("simple", inputs\)/);
  assert.deepEqual(o.errors, []);
});

test('the server view shows the latest warnings as text, never as markup', async (t) => {
  logger.warn('a model said <img src=x id=injected> & "quoted"');
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('link', { name: 'Server' }).click();
  await page.getByText('a model said <img src=x id=injected> & "quoted"').waitFor();
  assert.equal(await page.locator('#injected').count(), 0);
  assert.match(await page.getByRole('table', { name: 'Server' }).innerText(), /^triton\t0\.1\.0\tv20/m);
  await page.getByText('Started in process: no flags.').waitFor();
  assert.deepEqual(o.errors, []);
});

test('the trace view changes the trace setting through the trace extension and draws the latest traces as timelines', async (t) => {
  const o = await openConsole(t, open);
  if (!o) return;
  const { page } = o;
  await page.getByRole('link', { name: 'Traces' }).click();
  await page.getByText('No trace yet').waitFor();
  assert.equal(await page.getByLabel('Trace level').inputValue(), 'OFF');
  await page.getByLabel('Trace level').selectOption('TIMESTAMPS');
  await page.getByLabel('Trace rate (one request in N)').fill('1');
  await page.getByRole('button', { name: 'Apply to all models' }).click();
  await page.getByRole('status').filter({ hasText: 'Trace setting applied.' }).waitFor();
  const setting = (await (await fetch(`${urlOf(open)}/v2/trace/setting`)).json()) as Record<string, unknown>;
  assert.deepEqual([setting['trace_level'], setting['trace_rate']], [['TIMESTAMPS'], '1']);
  for (let i = 0; i < 3; i++) assert.equal((await infer()).status, 200);
  await page.getByRole('button', { name: 'Refresh traces' }).click();
  await page.locator('.timeline').nth(2).waitFor();
  const first = await page.locator('.timeline').first().innerText();
  assert.match(first, /^Trace \d+: simple version 1, [0-9.]+ ms/);
  assert.match(first, /queue [0-9.]+ ms, compute input [0-9.]+ ms, infer [0-9.]+ ms, output [0-9.]+ ms/);
  assert.ok((await page.locator('.timeline .bar').count()) >= 3 * 4);
  // A refusal is the API's: a rate that is not a number.
  await page.getByLabel('Trace rate (one request in N)').fill('often');
  await page.getByRole('button', { name: 'Apply to all models' }).click();
  await page.getByRole('status').filter({ hasText: 'The trace setting was refused: ' }).waitFor();
  await page.getByLabel('Trace level').selectOption('OFF');
  await page.getByRole('button', { name: 'Apply to all models' }).click();
  await page.getByRole('status').filter({ hasText: 'Trace setting applied.' }).waitFor();
  assert.equal(server.traces.active, false);
  assert.deepEqual(o.errors.filter((e) => !/Failed to load resource/.test(e)), []);
});

test('a text model gets a chat box that streams through generate_stream, the conversation passed back each turn', async (t) => {
  const loaded = await postJson(`${urlOf(open)}/v2/repository/models/tiny_llm/load`, {});
  assert.equal(loaded.status, 200);
  try {
    const o = await openConsole(t, open);
    if (!o) return;
    const { page } = o;
    await page.goto(`${urlOf(open)}/console/#try/tiny_llm`);
    await page.getByLabel('Message').fill('Hello there');
    await page.getByLabel('Max tokens').fill('6');
    await page.getByRole('button', { name: 'Send message' }).click();
    const figures = page.locator('#chat-figures');
    await figures.filter({ hasText: /^6 tokens, first after \d+ ms, [0-9.–]+ tokens\/s, finish reason length\.$/ }).waitFor();
    const log = page.getByRole('list', { name: 'Conversation with tiny_llm' });
    assert.equal(await log.locator('li').count(), 2);
    assert.ok((await log.locator('li.chat-assistant .said').innerText()).length > 0);
    const stats = async () => (await (await fetch(`${urlOf(open)}/v2/models/tiny_llm/stats`)).json() as any).model_stats[0];
    const firstPrompt = (await stats()).nereid_prompt_tokens;
    assert.equal((await stats()).nereid_generated_tokens, 6);
    // The second turn carries the first: its prompt is longer than the whole first one.
    await page.getByLabel('Message').fill('And again');
    await page.getByRole('button', { name: 'Send message' }).click();
    // The click's handler has set the figures to 'Generating…' (synchronously) until the turn is over.
    await figures.filter({ hasText: /finish reason/ }).waitFor();
    assert.equal(await log.locator('li').count(), 4);
    assert.equal((await stats()).nereid_generated_tokens, 12);
    assert.ok((await stats()).nereid_prompt_tokens - firstPrompt > firstPrompt, 'the history is sent back');
    assert.match(await page.getByLabel('curl command').innerText(), /generate_stream' -d '\{"text_input":"","messages":/);
    assert.deepEqual(o.errors, []);
  } finally {
    await postJson(`${urlOf(open)}/v2/repository/models/tiny_llm/unload`, {});
  }
});

test('with API keys, the console needs the key typed in the Access panel, and its scopes decide as for any client', async (t) => {
  const o = await openConsole(t, keyed);
  if (!o) return;
  const { page } = o;
  await page.getByText("The repository index was refused: This API requires an API key, expecting header 'Authorization: Bearer <key>'").waitFor();
  await page.getByText('Access').click();
  await page.getByLabel('API key (Bearer)').fill(KEY);
  await page.getByRole('button', { name: 'Refresh' }).click();
  await page.getByRole('button', { name: 'Unload simple' }).waitFor();
  // The key has no inference scope: the form's request is refused with the API's words.
  await page.getByRole('link', { name: 'Try a request' }).click();
  await page.getByLabel('Model').selectOption('simple');
  await page.getByRole('button', { name: 'Send' }).click();
  await page.getByRole('status').filter({ hasText: "simple refused the request: The API key 'reader' lacks scope 'inference'" }).waitFor();
});
