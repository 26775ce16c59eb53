/**
 * One `nereid perf` run: find the model, build and pre-encode its requests, check that one is accepted, then
 * measure each concurrency or request rate in turn and report as perf_analyzer does.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { buildStreams, InputDataError } from './input-data.js';
import { LoadGenerator, type LoadPlan } from './load-generator.js';
import { measureLevel, RequestFailed, type LevelResult } from './measure.js';
import type { ModelInfo } from './model-info.js';
import { rangeValues, type PerfOptions } from './options.js';
import { setUpSharedMemory, type ShmSetup } from './shared-memory.js';
import { closingText, csvText, levelText, profileExport, settingsText } from './summary.js';
import type { Prepared, RequestSpec, Transport } from './transport.js';
import { createHttpTransport } from './http-transport.js';
import { whenAborted } from '../abort.js';

/** A refusal to explain to the user in one line (no stack). */
export class PerfError extends Error {}

export interface PerfIo {
  out(text: string): void;
  /** A progress line, replaced by the next one. */
  progress(text: string): void;
  readonly signal?: AbortSignal;
}

export interface PerfRun {
  readonly info: ModelInfo;
  readonly results: LevelResult[];
  readonly interrupted: boolean;
}

/** protobufjs and the gRPC client load only for -i grpc. */
export async function createTransport(o: PerfOptions, connections: number): Promise<Transport> {
  const common = { url: o.url, model: o.model, version: o.version, headers: o.headers, tls: o.tls };
  if (o.protocol === 'http') return createHttpTransport({ ...common, connections });
  const { createGrpcTransport } = await import('./grpc-transport.js');
  return createGrpcTransport({ ...common, concurrency: connections });
}

function explainConnect(e: unknown, o: PerfOptions): never {
  const err = e as Error & { code?: string; cause?: { code?: string } };
  const code = err.code ?? err.cause?.code;
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'EHOSTUNREACH') {
    throw new PerfError(`unable to reach a server at ${o.url} over ${o.protocol.toUpperCase()} (${code}): is it running, and is -u right?`);
  }
  throw new PerfError(err.message);
}

function sendOnce(t: Transport, p: Prepared, seq: Parameters<Transport['send']>[1]): Promise<string | null> {
  return new Promise((resolve) => t.send(p, seq, { response() {}, done: resolve }));
}

/** For callers that sweep otherwise than a linear range (analyze's powers of two, stopping at a plateau). */
export interface SweepControl {
  readonly levels?: readonly number[];
  /** Asked after each level; true ends the sweep. */
  stopAfter?(results: readonly LevelResult[]): boolean;
}

/** --warmup-request-count requests sent and not measured, at the sweep's highest concurrency. */
async function warmUp(gen: LoadGenerator, o: PerfOptions, levels: readonly number[], io: PerfIo): Promise<void> {
  io.progress(`warming up: ${o.warmupRequests} requests`);
  gen.start({ mode: 'concurrency', value: o.mode === 'concurrency' ? Math.max(...levels) : Math.min(o.maxThreads, 4), distribution: 'constant' });
  const aborted = whenAborted(io.signal);
  await Promise.race([gen.untilCount(o.warmupRequests), aborted.promise]);
  aborted.dispose();
  await gen.stop();
  const w = gen.rotate();
  if (w.errors > 0) throw new PerfError(`${w.errors} warm-up requests failed: ${w.firstError}`);
}

export async function runPerf(o: PerfOptions, io: PerfIo, sweep: SweepControl = {}): Promise<PerfRun> {
  const levels = sweep.levels ?? rangeValues(o.range);
  const maxInFlight = o.mode === 'concurrency' ? Math.max(...levels) : o.maxThreads;
  const transport = await createTransport(o, maxInFlight);
  let shm: ShmSetup | undefined;
  try {
    let info: ModelInfo;
    try {
      info = await transport.modelInfo();
    } catch (e) {
      explainConnect(e, o);
    }
    if (o.batchSize > 1 && info.maxBatchSize === 0) throw new PerfError(`can not specify batch size > 1 as the model '${o.model}' does not support batching`);
    if (info.maxBatchSize > 0 && o.batchSize > info.maxBatchSize) throw new PerfError(`expecting batch size <= ${info.maxBatchSize} for model '${o.model}', got ${o.batchSize}`);
    if (info.decoupled && !o.streaming) throw new PerfError(`model '${o.model}' is decoupled: measure it with -i grpc --streaming`);
    let streams;
    try {
      streams = buildStreams(info, o);
    } catch (e) {
      if (e instanceof InputDataError) throw new PerfError(e.message);
      throw e;
    }
    const steps = streams.flat();
    if (o.sharedMemory === 'system') {
      shm = await setUpSharedMemory(transport, steps, info.outputs, o.outputShmSize).catch((e: Error) => {
        throw new PerfError(e.message);
      });
    }
    const prepared = streams.map((s) =>
      s.map((step) => transport.prepare({ inputs: step, outputs: info.outputs, shm: shm?.placements(step) } satisfies RequestSpec, o.streaming)),
    );
    const sequence = info.sequence ? { length: o.sequenceLength, idStart: o.sequenceIdRange.start, idEnd: o.sequenceIdRange.end } : undefined;
    // One request first: a refusal (data that does not fit the model, a header the server rejects) is reported as
    // the server worded it, before any measuring.
    const seqId = o.sequenceIdRange.start;
    const refused = await sendOnce(transport, prepared[0]![0], sequence ? { id: seqId, start: true, end: true } : undefined);
    if (refused !== null) throw new PerfError(`the server refused a request to '${o.model}': ${refused}`);

    io.out(settingsText({ ...o, protocol: o.protocol }));
    const results: LevelResult[] = [];
    const gen = new LoadGenerator(transport, prepared, sequence, o.exportFile !== undefined);
    let interrupted = false;
    if (o.warmupRequests > 0) await warmUp(gen, o, levels, io);
    for (const [k, value] of levels.entries()) {
      const plan: LoadPlan = { mode: o.mode, value, distribution: o.distribution };
      const label = o.mode === 'concurrency' ? 'concurrency' : 'request rate';
      const left = levels.length - k - 1;
      let r: LevelResult | undefined;
      try {
        r = await measureLevel(gen, transport, plan, o, {
          signal: io.signal,
          window: (trial, tput, lat) => {
            const windowsLeft = Math.max(0, 3 - trial) + left * 3;
            const secs = Math.round((windowsLeft * o.intervalMs) / 1000);
            io.progress(`[${label} ${value} (${k + 1}/${levels.length}) · window ${trial}/${o.maxTrials}] ${tput.toFixed(1)} infer/sec, ${Math.round(lat)} usec${o.mode === 'concurrency' ? '' : ''} · at least ${secs} s left`);
          },
        });
      } catch (e) {
        if (e instanceof RequestFailed) throw new PerfError(e.message);
        throw e;
      }
      io.progress('');
      if (r === undefined) {
        interrupted = true;
        break;
      }
      results.push(r);
      io.out(levelText(r, o.streaming));
      if (o.latencyThresholdMs !== undefined && (r.latency.chosen ?? r.latency.meanUs) > o.latencyThresholdMs * 1000) break;
      if (sweep.stopAfter?.(results)) break;
    }
    io.out(closingText(results));
    return { info, results, interrupted };
  } finally {
    await shm?.release();
    await transport.close();
  }
}

/** The files asked for with -f, --profile-export-file. */
export function writeOutputs(o: PerfOptions, run: PerfRun, originMs: number, originNs: bigint): void {
  if (o.csvFile) writeFileSync(o.csvFile, csvText(run.results, o.verboseCsv, o.streaming));
  if (o.exportFile) writeFileSync(o.exportFile, JSON.stringify(profileExport(run.results, originMs, originNs)));
}

export function clock(): { ms: number; ns: bigint } {
  return { ms: performance.now(), ns: BigInt(Date.now()) * 1_000_000n };
}
