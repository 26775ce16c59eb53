import { test } from 'node:test';
import assert from 'node:assert/strict';
import { get as httpGet } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { EXAMPLES, ROOT } from '../../helpers/paths.js';
import { request } from '../../helpers/http.js';
import { spawnServer } from '../../helpers/server.js';

// The web console's files on the HTTP port (--allow-console): on by default for a loopback address, with its
// URL printed; off by default elsewhere and when turned off; every answer under a CSP that allows no inline
// script; revalidated by ETag; only the files of the package, whatever path a client sends.

/** A GET with the path sent exactly as given (fetch would resolve `..` before sending). */
function rawGet(url: string, path: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    httpGet({ hostname, port, path }, (res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    }).on('error', reject);
  });
}

function rawGetHeaders(url: string, path: string, headers: Record<string, string>): Promise<Record<string, string | string[] | undefined>> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    httpGet({ hostname, port, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.headers));
    }).on('error', reject);
  });
}

async function stop(p: Awaited<ReturnType<typeof spawnServer>>): Promise<void> {
  p.child.kill('SIGTERM');
  assert.equal(await p.exited, 0, p.output());
}

test('a loopback server serves the console by default, prints its URL, and answers only its own files', async () => {
  const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit']);
  try {
    const url = p.url;
    // Printed before "Started HTTPService", which spawnServer waits for.
    assert.match(p.output(), new RegExp(`Console at ${url.replace(/[.]/g, '\\.')}/console/`));
    const page = await request(`${url}/console/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /^text\/html/);
    const csp = page.headers.get('content-security-policy')!;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline script, no other origin');
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    assert.equal(page.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(page.headers.get('set-cookie'), null);
    assert.doesNotMatch(page.body.toString(), /<script(?![^>]*\bsrc=)/, 'every script is a file');
    assert.doesNotMatch(page.body.toString(), /https?:\/\//, 'nothing from elsewhere');

    // uPlot from the installed package, byte for byte; gzipped for a client that takes it (fetch inflates it).
    const raw = await rawGetHeaders(url, '/console/vendor/uPlot.esm.js', { 'accept-encoding': 'gzip' });
    assert.equal(raw['content-encoding'], 'gzip');
    assert.ok(Number(raw['content-length']) < 60_000, String(raw['content-length']));
    assert.equal((await rawGetHeaders(url, '/console/vendor/uPlot.esm.js', {}))['content-encoding'], undefined);
    const uplot = await request(`${url}/console/vendor/uPlot.esm.js`);
    assert.equal(uplot.status, 200);
    assert.match(uplot.headers.get('content-type')!, /^text\/javascript/);
    assert.deepEqual(uplot.body, readFileSync(createRequire(join(ROOT, 'package.json')).resolve('uplot/dist/uPlot.esm.js')));

    // Revalidation: the same ETag answers 304 with no body.
    const app = await request(`${url}/console/app.js`);
    const etag = app.headers.get('etag')!;
    assert.equal(app.headers.get('cache-control'), 'no-cache');
    const again = await request(`${url}/console/app.js`, { headers: { 'If-None-Match': etag } });
    assert.deepEqual([again.status, again.body.byteLength], [304, 0]);

    assert.equal((await request(`${url}/console`, { method: 'GET' })).status, 200, 'the bare path redirects to the page');
    assert.equal((await request(`${url}/console/app.js`, { method: 'POST', body: '' })).status, 405);
    for (const path of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json', '/console//etc/passwd', '/console/vendor/../app.js', '/console/console.test.js']) {
      const r = await rawGet(url, path);
      assert.equal(r.status, 404, path);
      assert.doesNotMatch(r.body, /"name": "nereid"|root:/, path);
    }
    // Paths that are not the console's keep the API's answer.
    assert.deepEqual(await rawGet(url, '/v2/nothing'), { status: 404, body: '{"error":"Not Found"}' });
  } finally {
    await stop(p);
  }
});

test('GET /v2/nereid/server: the command line with secrets hidden, refusals by limit and the latest warnings, in the logging category', async () => {
  const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', '--http-max-input-size=4096',
    '--http-restricted-api', 'logging:admin-key=s3cret']);
  try {
    const url = p.url;
    assert.equal((await request(`${url}/console/`)).status, 200, 'the page itself is not an API category');
    const refused = await request(`${url}/v2/nereid/server`);
    assert.deepEqual([refused.status, refused.json()], [403, { error: "This API is restricted, expecting header 'admin-key'" }]);
    const big = await request(`${url}/v2/models/simple/infer`, { body: 'x'.repeat(10_000), headers: { 'Content-Type': 'application/json' } });
    assert.equal(big.status, 400);
    const r = await request(`${url}/v2/nereid/server`, { headers: { 'admin-key': 's3cret' } });
    assert.equal(r.status, 200);
    const s = r.json();
    assert.equal(s.name, 'triton', "the server metadata's fields, as Triton names itself");
    assert.ok(Array.isArray(s.extensions));
    assert.ok(s.nereid_uptime_secs >= 0 && s.nereid_memory_bytes.rss > 0);
    // The flags given (canonical names, in order), then every other one at its default.
    const flags = s.nereid_flags as { name: string; value: string; given: boolean }[];
    const given = flags.filter((f) => f.given).map((f) => `--${f.name}=${f.value}`);
    assert.deepEqual(given.slice(-4), ['--model-control-mode=explicit', '--load-model=simple', '--http-max-input-size=4096', '--http-restricted-api=logging:admin-key=<hidden>']);
    assert.deepEqual(flags.find((f) => f.name === 'grpc-port'), { name: 'grpc-port', value: '8001', given: false });
    assert.equal(flags.filter((f) => f.name === 'http-port').length, 1);
    assert.doesNotMatch(JSON.stringify(s), /s3cret/);
    assert.deepEqual(Object.values(s.nereid_limit_refusals), [1]);
    const warning = s.nereid_recent_log.find((l: { message: string }) => /refused a request/.test(l.message));
    assert.equal(warning?.level, 'warning', JSON.stringify(s.nereid_recent_log));
    assert.equal((await request(`${url}/v2/nereid/server`, { method: 'POST', body: '{}', headers: { 'admin-key': 's3cret' } })).status, 405);
    // The latest traces are the trace category's, open here; none while tracing is off.
    assert.deepEqual((await request(`${url}/v2/nereid/traces`)).json(), { traces: [] });
  } finally {
    await stop(p);
  }
});

test('--allow-console=false, and a non-loopback address without the flag, serve no console', async () => {
  for (const flags of [['--allow-console=false'], ['--http-address=0.0.0.0']]) {
    const p = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', ...flags]);
    try {
      assert.equal((await request(`${p.url}/console/`)).status, 404, flags.join(' '));
      assert.doesNotMatch(p.output(), /Console at/);
      assert.equal((await request(`${p.url}/v2/health/live`)).status, 200);
    } finally {
      await stop(p);
    }
  }
  const on = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--http-address=0.0.0.0', '--allow-console=true']);
  try {
    assert.equal((await request(`${on.url}/console/`)).status, 200);
  } finally {
    await stop(on);
  }
});
