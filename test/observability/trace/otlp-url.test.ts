import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from '../../helpers/paths.js';
import { postJson } from '../../helpers/http.js';
import { OtlpReceiver } from '../../helpers/otlp-receiver.js';
import { until } from '../../helpers/until.js';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import { createLogger, NOOP_LOGGER, type Logger } from '../../../src/observability/logger.js';

// --trace-config opentelemetry,url as Triton documents it and its tests write it: host:port/path, without a
// scheme (read as http). A value that names no usable endpoint is one line naming the flag; exports that fail
// are logged, at most a line per interval.

const SIMPLE = {
  inputs: [
    { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) },
    { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: Array.from({ length: 16 }, () => 1) },
  ],
};

const otel = (url: string): string[] => ['mode=opentelemetry', 'level=TIMESTAMPS', 'rate=1', `opentelemetry,url=${url}`, 'opentelemetry,bsp_schedule_delay=20'];

/** A server with `simple` and an HTTP frontend, traced per `trace`; `infer` sends one request to it. */
async function tracedServer(trace: string[], logger: Logger = NOOP_LOGGER) {
  const server = await InferenceServer.create({ modelRepositories: [EXAMPLES], modelControlMode: 'explicit', loadModels: ['simple'], trace }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, NOOP_LOGGER);
  return {
    infer: async (id: string) => assert.equal((await postJson(`http://127.0.0.1:${http.port}/v2/models/simple/infer`, { ...SIMPLE, id })).status, 200),
    close: async () => {
      await server.close(5);
      await http.close();
    },
  };
}

for (const host of ['127.0.0.1', 'localhost']) {
  test(`url=${host}:<port>/v1/traces (no scheme) exports over http; the root span carries INFER_RESPONSE_COMPLETE`, async () => {
    const receiver = await OtlpReceiver.start();
    const s = await tracedServer(otel(`${host}:${new URL(receiver.url).port}/v1/traces`));
    try {
      await s.infer(`no-scheme-${host}`);
      await until(() => receiver.spans.some((sp) => sp.name === 'InferRequest'), 'the root span at the receiver');
      const root = receiver.spans.find((sp) => sp.name === 'InferRequest')!;
      const names = [...root.events].sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0)).map((e) => e.name);
      assert.deepEqual(names, ['HTTP_RECV_START', 'HTTP_RECV_END', 'INFER_RESPONSE_COMPLETE', 'HTTP_SEND_START', 'HTTP_SEND_END']);
    } finally {
      await s.close();
      await receiver.close();
    }
  });
}

test('a url it cannot use stops `nereid serve` with one line naming the flag, no stack trace', () => {
  for (const url of ['http://[::1', 'ftp://collector/v1/traces', 'http://']) {
    const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'nereid.js'), 'serve', `--model-repository=${EXAMPLES}`, '--model-control-mode=explicit',
      '--http-port=0', '--allow-grpc=false', '--allow-metrics=false', '--trace-config=mode=opentelemetry', `--trace-config=opentelemetry,url=${url}`], { encoding: 'utf8', timeout: 60_000 });
    // A flag error, as any other: exit 2, the line, then where to find the flags.
    assert.equal(r.status, 2, r.stdout + r.stderr);
    const lines = (r.stdout + r.stderr).trim().split('\n');
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.equal(lines[0], `nereid serve: --trace-config opentelemetry,url=${url}: not an OTLP/HTTP endpoint; expected [http://|https://]<host>[:<port>]/<path>, e.g. localhost:4318/v1/traces`);
    assert.match(lines[1]!, /--help/);
  }
});

test('failed exports are logged: the first at once, then at most one line per 10 s', async () => {
  // A collector that refuses every export (400 is not retried, so each failure is reported at once).
  let posts = 0;
  const collector = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      posts++;
      res.writeHead(400).end();
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const port = (collector.address() as { port: number }).port;
  const warnings: string[] = [];
  const base = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
  const logger: Logger = {
    error: () => {}, info: () => {}, verbose: () => {}, isVerbose: () => false,
    warn: (m) => warnings.push(m), warning: (m) => warnings.push(m), child: () => logger,
    settings: () => base.settings(), update: (p) => base.update(p), close: () => base.close(),
  };
  const s = await tracedServer(otel(`127.0.0.1:${port}/v1/traces`), logger);
  try {
    await s.infer('lost-1');
    await until(() => warnings.length > 0, 'a warning about the failed export');
    assert.match(warnings[0]!, new RegExp(`^OpenTelemetry trace export to http://127\\.0\\.0\\.1:${port}/v1/traces failed, \\d+ spans dropped: `));
    const before = posts;
    for (let i = 2; i <= 4; i++) {
      await s.infer(`lost-${i}`);
      await until(() => posts > before + i - 2, `export ${i} to be refused`);
    }
    // More refused exports within the interval: still the one line.
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(warnings.length, 1, warnings.join('\n'));
  } finally {
    await s.close();
    collector.close();
  }
});
