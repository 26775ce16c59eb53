/**
 * `nereid serve`: the flags read, the logger and the server made, the frontends the flags turn on started, and
 * on SIGINT or SIGTERM the drain and the shutdown, as tritonserver's main does them.
 */
import { isNereidError } from '../errors.js';
import type { MetricsOptions } from '../server/options.js';
import { createLogger, type Logger } from '../observability/logger.js';
import { InferenceServer } from '../server/inference-server.js';
import { FlagError, parseServeFlags, USAGE, type FlagInEffect, type ServeOptions } from './flags.js';
import { grpcFlagWarnings, grpcOptions } from './grpc-options.js';
import { httpFlagWarnings, httpOptions, openAiOptions, openAiResponseStore } from './http-options.js';
import { apiKeys, exportKeyMetrics } from './api-keys.js';
import { shownFlags } from './shown-flags.js';
import type { ApiKeys } from '../frontends/api-keys.js';

/** A started frontend, as far as stopping it goes. */
interface Closable {
  close(): Promise<unknown>;
}

interface Started {
  readonly http: Closable | undefined;
  readonly grpc: Closable | undefined;
  readonly metrics: Closable | undefined;
  readonly openai: Closable | undefined;
}

type Frontends = Awaited<ReturnType<typeof importFrontends>>;

/** Returns the process exit code: 0 after a clean shutdown, 1 on failure, 2 on bad flags. */
export async function serveCommand(argv: readonly string[]): Promise<number> {
  let opts;
  try {
    opts = parseServeFlags([...argv]);
  } catch (e) {
    if (e instanceof FlagError) {
      process.stderr.write(`nereid serve: ${e.message}\nRun 'nereid serve --help' for the list of flags.\n`);
      return 2;
    }
    throw e;
  }
  if (opts.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  let logger;
  try {
    logger = createLogger(opts.log);
  } catch (e) {
    process.stderr.write(`nereid serve: ${(e as Error).message}\n`);
    return 1;
  }
  for (const w of opts.warnings) logger.warn(w);
  if (opts.http.allow) for (const w of httpFlagWarnings(opts)) logger.warn(w);
  if (opts.grpc.allow) for (const w of grpcFlagWarnings(opts)) logger.warn(w);
  // The frontends' modules (protobufjs among them) load while the models do; a frontend that is
  // off is never imported.
  const frontends = importFrontends(opts);
  frontends.catch(() => undefined);
  let keys: ApiKeys | undefined;
  try {
    keys = apiKeys(opts, logger);
  } catch (e) {
    logger.error(`failed to read the API key file: ${(e as Error).message}`);
    await logger.close();
    return 1;
  }
  let server: InferenceServer;
  try {
    server = await InferenceServer.create({ ...opts.server, ...metricsOptions(opts) }, { logger });
  } catch (e) {
    logger.error(isNereidError(e) ? e.message : String((e as Error)?.stack ?? e));
    logger.error('exiting: failed to initialize the server');
    await logger.close();
    return 1;
  }
  exportKeyMetrics(keys, server);
  // Ready only once every listener is open: a client that waits for ready on one protocol may dial any other.
  const listening = server.holdReadiness();
  const started = await startFrontends(opts, server, logger, await frontends, keys, shownFlags(argv));
  if (started === undefined) {
    keys?.close();
    return 1;
  }
  listening();
  const code = await stopOnSignal(opts, server, logger, started);
  keys?.close();
  return code;
}

/**
 * Starts the frontends in turn. When one fails to start, the server and the frontends already started are
 * closed, in that order, and the result is undefined.
 */
async function startFrontends(opts: ServeOptions, server: InferenceServer, logger: Logger, f: Frontends, keys: ApiKeys | undefined, flags: FlagInEffect[]): Promise<Started | undefined> {
  const steps: Array<{ readonly key: keyof Started; readonly what: string; readonly start: (() => Promise<Closable>) | undefined }> = [
    { key: 'http', what: 'HTTP', start: opts.http.allow ? () => f.startHttpFrontend(server, { ...httpOptions(opts), keys, flags }, logger.child('http/server.ts')) : undefined },
    { key: 'grpc', what: 'GRPC', start: opts.grpc.allow ? () => f.startGrpcFrontend(server, { ...grpcOptions(opts), keys }, logger.child('grpc/server.ts')) : undefined },
    { key: 'metrics', what: 'metrics', start: opts.metrics.allow ? () => f.startMetricsFrontend(server, opts.metrics, logger.child('metrics/server.ts')) : undefined },
    {
      key: 'openai',
      what: 'OpenAI-compatible',
      start: opts.openai.allow ? async () => f.startOpenAiFrontend(server, { ...openAiOptions(opts), keys, responseStore: await openAiResponseStore(opts) }, logger.child('openai/server.ts')) : undefined,
    },
  ];
  const started: { -readonly [K in keyof Started]: Closable | undefined } = { http: undefined, grpc: undefined, metrics: undefined, openai: undefined };
  for (const step of steps) {
    try {
      if (step.start) started[step.key] = await step.start();
    } catch (e) {
      logger.error(`failed to start the ${step.what} service: ${(e as Error).message}`);
      await server.close(0);
      for (const s of steps) await started[s.key]?.close();
      await logger.close();
      return undefined;
    }
  }
  return started;
}

/** Waits for SIGINT or SIGTERM, drains (--exit-drain-secs), stops; the exit code says whether all ended in time. */
async function stopOnSignal(opts: ServeOptions, server: InferenceServer, logger: Logger, started: Started): Promise<number> {
  const signal = await untilSignal();
  const exitSecs = opts.server.exitTimeoutSecs ?? 30;
  const drainSecs = opts.exitDrainSecs;
  if (drainSecs > 0) {
    // Unready first, still serving: a load balancer's health check takes the server out before it refuses work.
    server.holdReadiness();
    logger.info(`received ${signal}: the server is unready and keeps serving for ${drainSecs} s (--exit-drain-secs), then stops`);
    await new Promise((resolve) => setTimeout(resolve, drainSecs * 1000));
  }
  logger.info(`${drainSecs > 0 ? 'drain over' : `received ${signal}`}: stopping; the server is unready and waits up to ${exitSecs - drainSecs} s for requests in flight`);
  const clean = await server.close(exitSecs - drainSecs);
  await Promise.all([started.http?.close(), started.grpc?.close()]);
  await started.metrics?.close();
  await started.openai?.close();
  if (clean) {
    logger.info('all models unloaded; exiting');
  } else {
    // tritonserver's words and status when its exit timeout expires with work still running.
    logger.error('failed to stop server: Internal - Exit timeout expired. Exiting immediately.');
  }
  await logger.close();
  return clean ? 0 : 1;
}

/** The start functions of the frontends the flags turn on; the others are never imported. */
async function importFrontends(opts: ServeOptions): Promise<{
  startHttpFrontend: typeof import('../frontends/http/server.js').startHttpFrontend;
  startGrpcFrontend: typeof import('../frontends/grpc/server.js').startGrpcFrontend;
  startMetricsFrontend: typeof import('../frontends/metrics/server.js').startMetricsFrontend;
  startOpenAiFrontend: typeof import('../frontends/openai/server.js').startOpenAiFrontend;
}> {
  const off = (): never => {
    throw new Error('this frontend is off');
  };
  const [http, grpc, metrics, openai] = await Promise.all([
    opts.http.allow ? import('../frontends/http/server.js') : undefined,
    opts.grpc.allow ? import('../frontends/grpc/server.js').then((m) => (m.prepareGrpcFrontend(), m)) : undefined,
    opts.metrics.allow ? import('../frontends/metrics/server.js') : undefined,
    opts.openai.allow ? import('../frontends/openai/server.js') : undefined,
  ]);
  return {
    startHttpFrontend: http?.startHttpFrontend ?? off,
    startGrpcFrontend: grpc?.startGrpcFrontend ?? off,
    startMetricsFrontend: metrics?.startMetricsFrontend ?? off,
    startOpenAiFrontend: openai?.startOpenAiFrontend ?? off,
  };
}

/** --allow-metrics and the flags beside it, as the server's metrics option (absent when metrics are off). */
function metricsOptions(opts: ServeOptions): { metrics?: MetricsOptions } {
  if (!opts.metrics.allow) return {};
  return {
    metrics: {
      config: opts.extra['metrics-config'] ?? [],
      intervalMs: opts.metrics.intervalMs,
      cpu: (opts.extra['allow-cpu-metrics'] ?? []).at(-1) !== 'false',
    },
  };
}

/** Resolves on the first SIGINT or SIGTERM; a second one ends the process at once. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const first = (sig: NodeJS.Signals): void => {
      process.removeListener('SIGINT', first);
      process.removeListener('SIGTERM', first);
      process.once('SIGINT', () => process.exit(1));
      process.once('SIGTERM', () => process.exit(1));
      resolve(sig);
    };
    process.on('SIGINT', first);
    process.on('SIGTERM', first);
  });
}
