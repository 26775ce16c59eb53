import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import type { Logger } from '../../observability/logger.js';

/**
 * The process's one llama.cpp binding. A native library is loaded once per process and never unloaded, and
 * node-llama-cpp checks its binary in a child process on every getLlama, so the binding is shared by every
 * server in the process rather than made per server. It is started by the first model that needs it, or ahead
 * of it by startLlama() while other models load.
 *
 * node-llama-cpp is told to use the prebuilt CPU binary it ships (@node-llama-cpp/linux-x64 on this platform)
 * and never to download, build or probe for a GPU at run time: a server must start the same way offline as
 * online. maxThreads 0 lets each context use exactly the threads its model's config asks for, instead of a
 * process-wide share of the cores.
 */
let engine: Promise<Llama> | undefined;

export function startLlama(): Promise<Llama> {
  engine ??= getLlama({
    gpu: false,
    build: 'never',
    usePrebuiltBinaries: true,
    skipDownload: true,
    progressLogs: false,
    maxThreads: 0,
    logLevel: LlamaLogLevel.warn,
    logger: forward,
  });
  engine.catch(() => (engine = undefined));
  return engine;
}

/**
 * Where llama.cpp's log goes. Its log callback is one per process and its lines name no model, so a line goes to
 * the logger of the instance that most recently started loading and is still alive: while a model loads (when
 * llama.cpp has most to say), its own logger. Each entry leaves with its instance, so no logger outlives its
 * model or server.
 */
const logTargets: Logger[] = [];

/**
 * llama.cpp's lines reach JavaScript through the event loop, after the call that wrote them has settled (a
 * failed load's reasons come just after its rejection): a route stays this long after it is ended.
 */
const LOG_LINGER_MS = 1000;

/** Sends llama.cpp's log to `logger` from now until shortly after the returned function is called. */
export function routeLlamaLog(logger: Logger): () => void {
  logTargets.push(logger);
  let routed = true;
  return () => {
    if (!routed) return;
    routed = false;
    setTimeout(() => logTargets.splice(logTargets.lastIndexOf(logger), 1), LOG_LINGER_MS).unref();
  };
}

function forward(level: LlamaLogLevel, message: string): void {
  const log = logTargets.at(-1);
  if (!log) return;
  const text = `llama.cpp: ${message.trimEnd()}`;
  if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) log.error(text);
  else if (level === LlamaLogLevel.warn) log.warn(text);
  else log.verbose(2, text);
}
