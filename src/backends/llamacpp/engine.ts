import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import type { Logger } from '../../observability/logger.js';

let engine: Promise<Llama> | undefined;
let log: Logger | undefined;

/**
 * The process's one llama.cpp binding, loaded on first use. node-llama-cpp is told to use the prebuilt CPU
 * binary it ships (@node-llama-cpp/linux-x64 on this platform) and never to download, build or probe for a
 * GPU at run time: a server must start the same way offline as online. maxThreads 0 lets each context use
 * exactly the threads its model's config asks for, instead of a process-wide share of the cores.
 */
export function llama(logger: Logger): Promise<Llama> {
  log ??= logger;
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

function forward(level: LlamaLogLevel, message: string): void {
  const text = `llama.cpp: ${message.trimEnd()}`;
  if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) log?.error(text);
  else if (level === LlamaLogLevel.warn) log?.warn(text);
  else log?.verbose(2, text);
}
