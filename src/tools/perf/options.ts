/** `nereid perf` flags (perf_analyzer's names and defaults) → options. */
import { boolFlag, choiceFlag, intFlag, last, numFlag, parseArgv, UsageError, usageText, type FlagSpec, type ParsedFlags } from '../argv.js';

export const PERF_FLAGS: readonly FlagSpec[] = [
  { name: 'model-name', short: 'm', takes: 'value', arg: '<name>', help: 'The model to measure (required).' },
  { name: 'model-version', short: 'x', takes: 'value', arg: '<version>', help: 'Model version; the server picks when omitted.' },
  { name: 'url', short: 'u', takes: 'value', arg: '<host:port>', help: 'Server address. Default localhost:8000 for HTTP, localhost:8001 for gRPC.' },
  { name: 'protocol', short: 'i', takes: 'value', arg: 'http|grpc', help: 'Protocol. Default http.' },
  { name: 'batch-size', short: 'b', takes: 'value', arg: '<n>', help: 'Batch size of each request. Default 1.' },
  { name: 'concurrency-range', takes: 'value', arg: '<start:end:step>', help: 'Requests kept in flight, swept from start to end. Default 1:1:1.' },
  { name: 'request-rate-range', takes: 'value', arg: '<start:end:step>', help: 'Requests per second sent whatever the answers, swept from start to end.' },
  { name: 'request-distribution', takes: 'value', arg: 'constant|poisson', help: 'Gaps between requests in request-rate mode. Default constant.' },
  { name: 'max-threads', takes: 'value', arg: '<n>', help: 'Upper bound on requests in flight in request-rate mode. Default 16.' },
  { name: 'measurement-interval', short: 'p', takes: 'value', arg: '<ms>', help: 'Length of a time window. Default 5000.' },
  { name: 'measurement-mode', takes: 'value', arg: 'time_windows|count_windows', help: 'How a window ends. Default time_windows.' },
  { name: 'measurement-request-count', takes: 'value', arg: '<n>', help: 'Requests per window in count_windows mode. Default 50.' },
  { name: 'stability-percentage', short: 's', takes: 'value', arg: '<pct>', help: 'Three windows in a row within this of their mean are stable. Default 10.' },
  { name: 'max-trials', short: 'r', takes: 'value', arg: '<n>', help: 'Windows tried before giving up on stability. Default 10.' },
  { name: 'percentile', takes: 'value', arg: '<p>', help: 'Stabilize on and report this latency percentile instead of the mean.' },
  { name: 'warmup-request-count', takes: 'value', arg: '<n>', help: 'Requests sent and not measured before the first window. Default 0.' },
  { name: 'latency-threshold', short: 'l', takes: 'value', arg: '<ms>', help: 'Stop the sweep once latency passes this.' },
  { name: 'input-data', takes: 'value', arg: 'random|zero|<file.json>', help: 'Request data. Default random.' },
  { name: 'shape', takes: 'value', arg: '<name:d1,d2,...>', help: 'Shape of an input with variable dimensions (repeatable).' },
  { name: 'string-length', takes: 'value', arg: '<n>', help: 'Length of random BYTES elements. Default 128.' },
  { name: 'string-data', takes: 'value', arg: '<text>', help: 'Send this text in every BYTES element.' },
  { name: 'shared-memory', takes: 'value', arg: 'none|system', help: 'Pass tensors through registered system shared memory. Default none.' },
  { name: 'output-shared-memory-size', takes: 'value', arg: '<bytes>', help: 'Bytes of shared memory per output. Default 102400.' },
  { name: 'async', short: 'a', takes: 'optional', help: 'Asynchronous requests (the load loop always is; accepted for compatibility).' },
  { name: 'streaming', takes: 'optional', help: 'gRPC bidirectional streaming; required for decoupled models.' },
  { name: 'sequence-length', takes: 'value', arg: '<n>', help: 'Requests per sequence for sequence models. Default 20.' },
  { name: 'sequence-id-range', takes: 'value', arg: '<start[:end]>', help: 'Sequence ids to use. Default 1:2^32-1.' },
  { name: 'header', short: 'H', takes: 'value', arg: "'Name: value'", help: 'A header added to every request (repeatable).' },
  { name: 'ssl-grpc-use-ssl', takes: 'optional', help: 'TLS for gRPC.' },
  { name: 'ssl-grpc-root-certifications-file', takes: 'value', arg: '<path>', help: 'CA certificates for gRPC TLS.' },
  { name: 'ssl-grpc-private-key-file', takes: 'value', arg: '<path>', help: 'Client key for gRPC mutual TLS.' },
  { name: 'ssl-grpc-certificate-chain-file', takes: 'value', arg: '<path>', help: 'Client certificate for gRPC mutual TLS.' },
  { name: 'ssl-https-verify-peer', takes: 'value', arg: '0|1', help: 'Check the HTTPS server certificate. Default 1.' },
  { name: 'ssl-https-verify-host', takes: 'value', arg: '0|1|2', help: 'Check the HTTPS server name. Default 2.' },
  { name: 'ssl-https-ca-certificates-file', takes: 'value', arg: '<path>', help: 'CA certificates for HTTPS.' },
  { name: 'ssl-https-client-certificate-file', takes: 'value', arg: '<path>', help: 'Client certificate for HTTPS.' },
  { name: 'ssl-https-client-certificate-type', takes: 'value', arg: 'PEM', help: 'Only PEM.' },
  { name: 'ssl-https-private-key-file', takes: 'value', arg: '<path>', help: 'Client key for HTTPS.' },
  { name: 'ssl-https-private-key-type', takes: 'value', arg: 'PEM', help: 'Only PEM.' },
  { name: 'filename', short: 'f', takes: 'value', arg: '<file.csv>', help: "Write the results as CSV with perf_analyzer's columns." },
  { name: 'verbose-csv', takes: 'optional', help: 'Add the latency mean and breakdown columns to the CSV.' },
  { name: 'profile-export-file', takes: 'value', arg: '<file.json>', help: 'Write every request timestamp of the stable windows as JSON.' },
  { name: 'report-file', takes: 'value', arg: '<file.html>', help: 'Write a self-contained HTML chart of the run (Nereid).' },
  { name: 'verbose', short: 'v', takes: 'optional', help: 'Print every measurement window.' },
  { name: 'help', short: 'h', takes: 'optional', help: 'Print this text.' },
];

export const PERF_USAGE = usageText('Usage: nereid perf -m <model> [flags]   (perf_analyzer\'s flags)', PERF_FLAGS);

export interface Range { readonly start: number; readonly end: number; readonly step: number }

export interface TlsOptions {
  readonly ca?: string;
  readonly key?: string;
  readonly cert?: string;
  readonly verifyPeer: boolean;
  readonly verifyHost: boolean;
}

export interface PerfOptions {
  readonly help: boolean;
  readonly model: string;
  readonly version: string;
  readonly protocol: 'http' | 'grpc';
  readonly url: string;
  readonly tls: TlsOptions | undefined;
  readonly batchSize: number;
  readonly mode: 'concurrency' | 'request_rate';
  readonly range: Range;
  readonly distribution: 'constant' | 'poisson';
  readonly maxThreads: number;
  readonly intervalMs: number;
  readonly measurementMode: 'time_windows' | 'count_windows';
  readonly requestCount: number;
  readonly stabilityPct: number;
  readonly maxTrials: number;
  readonly percentile: number | undefined;
  readonly latencyThresholdMs: number | undefined;
  readonly warmupRequests: number;
  readonly inputData: string[];
  readonly shapes: ReadonlyMap<string, number[]>;
  readonly stringLength: number;
  readonly stringData: string | undefined;
  readonly sharedMemory: 'none' | 'system';
  readonly outputShmSize: number;
  readonly streaming: boolean;
  readonly sequenceLength: number;
  readonly sequenceIdRange: Range;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly csvFile: string | undefined;
  readonly verboseCsv: boolean;
  readonly exportFile: string | undefined;
  readonly reportFile: string | undefined;
  readonly verbose: boolean;
}

export function parseRange(name: string, text: string, def: Range): Range {
  const parts = text.split(':');
  if (parts.length > 3 || parts.some((p) => !/^\d+(\.\d+)?$/.test(p))) throw new UsageError(`--${name} takes start:end:step of positive numbers, got '${text}'`);
  const [start, end = parts.length === 1 ? Number(parts[0]) : def.end, step = def.step] = parts.map(Number);
  const r = { start: start!, end, step };
  if (r.start <= 0 && name !== 'sequence-id-range') throw new UsageError(`--${name}: start must be above 0, got '${text}'`);
  if (r.end < r.start) throw new UsageError(`--${name}: end ${r.end} is below start ${r.start}`);
  if (r.step <= 0) throw new UsageError(`--${name}: step must be above 0`);
  return r;
}

export function rangeValues(r: Range): number[] {
  const out: number[] = [];
  for (let v = r.start; v <= r.end + 1e-9 && out.length < 10_000; v += r.step) out.push(v);
  return out;
}

/** --shape name:d1,d2,… for each input given one. */
function shapeFlags(f: ParsedFlags): Map<string, number[]> {
  const shapes = new Map<string, number[]>();
  for (const s of f.get('shape') ?? []) {
    const m = /^(.+):([\d,]+)$/.exec(s);
    if (!m) throw new UsageError(`--shape takes name:d1,d2,..., got '${s}'`);
    shapes.set(m[1]!, m[2]!.split(',').filter((d) => d !== '').map(Number));
  }
  return shapes;
}

/** -H 'Name: value', names lower-cased. */
function headerFlags(f: ParsedFlags): [string, string][] {
  const headers: [string, string][] = [];
  for (const h of f.get('header') ?? []) {
    const i = h.indexOf(':');
    if (i <= 0) throw new UsageError(`-H takes 'Name: value', got '${h}'`);
    headers.push([h.slice(0, i).trim().toLowerCase(), h.slice(i + 1).trim()]);
  }
  return headers;
}

/** The --ssl-grpc-* or --ssl-https-* files of the protocol in use; undefined without TLS. */
function tlsFlags(f: ParsedFlags, protocol: 'http' | 'grpc'): PerfOptions['tls'] {
  // An https:// URL asks for TLS as much as the --ssl-https-* flags do; without them the system's CAs verify.
  const sslHttps = [...f.keys()].some((k) => k.startsWith('ssl-https')) || (protocol === 'http' && /^https:\/\//.test(last(f, 'url') ?? ''));
  const sslGrpc = boolFlag(f, 'ssl-grpc-use-ssl');
  const tls = sslGrpc || sslHttps
    ? {
        ca: last(f, protocol === 'grpc' ? 'ssl-grpc-root-certifications-file' : 'ssl-https-ca-certificates-file'),
        key: last(f, protocol === 'grpc' ? 'ssl-grpc-private-key-file' : 'ssl-https-private-key-file'),
        cert: last(f, protocol === 'grpc' ? 'ssl-grpc-certificate-chain-file' : 'ssl-https-client-certificate-file'),
        verifyPeer: last(f, 'ssl-https-verify-peer') !== '0',
        verifyHost: last(f, 'ssl-https-verify-host') !== '0',
      }
    : undefined;
  for (const t of ['ssl-https-client-certificate-type', 'ssl-https-private-key-type']) {
    const v = last(f, t);
    if (v !== undefined && v.toUpperCase() !== 'PEM') throw new UsageError(`--${t}: only PEM is supported`);
  }
  return tls;
}

export function parsePerfFlags(argv: readonly string[]): PerfOptions {
  const f = parseArgv(argv, PERF_FLAGS);
  const help = boolFlag(f, 'help');
  const model = last(f, 'model-name') ?? '';
  if (!help && model === '') throw new UsageError('-m (the model name) is required');
  const protocol = choiceFlag(f, 'protocol', ['http', 'grpc'] as const, 'http');
  const streaming = boolFlag(f, 'streaming');
  if (streaming && protocol !== 'grpc') throw new UsageError('--streaming is only available with -i grpc');
  if (f.has('concurrency-range') && f.has('request-rate-range')) throw new UsageError('--concurrency-range and --request-rate-range cannot be used together');
  const mode = f.has('request-rate-range') ? 'request_rate' : 'concurrency';
  const range = mode === 'concurrency'
    ? parseRange('concurrency-range', last(f, 'concurrency-range') ?? '1', { start: 1, end: 1, step: 1 })
    : parseRange('request-rate-range', last(f, 'request-rate-range')!, { start: 1, end: 1, step: 1 });
  const percentile = numFlag(f, 'percentile', undefined, 1);
  if (percentile !== undefined && percentile > 99) throw new UsageError('--percentile must be between 1 and 99');
  const shapes = shapeFlags(f);
  const headers = headerFlags(f);
  const tls = tlsFlags(f, protocol);
  let url = last(f, 'url') ?? (protocol === 'grpc' ? 'localhost:8001' : 'localhost:8000');
  url = url.replace(/^(https?|grpcs?):\/\//, '');
  return {
    help,
    model,
    version: last(f, 'model-version') ?? '',
    protocol,
    url,
    tls,
    batchSize: intFlag(f, 'batch-size', 1, 1),
    mode,
    range,
    distribution: choiceFlag(f, 'request-distribution', ['constant', 'poisson'] as const, 'constant'),
    maxThreads: intFlag(f, 'max-threads', 16, 1),
    intervalMs: intFlag(f, 'measurement-interval', 5000, 1),
    measurementMode: choiceFlag(f, 'measurement-mode', ['time_windows', 'count_windows'] as const, 'time_windows'),
    requestCount: intFlag(f, 'measurement-request-count', 50, 1),
    stabilityPct: numFlag(f, 'stability-percentage', 10, 0)!,
    maxTrials: intFlag(f, 'max-trials', 10, 1),
    percentile,
    latencyThresholdMs: numFlag(f, 'latency-threshold', undefined, 0),
    warmupRequests: intFlag(f, 'warmup-request-count', 0, 0),
    inputData: f.get('input-data') ?? ['random'],
    shapes,
    stringLength: intFlag(f, 'string-length', 128, 0),
    stringData: last(f, 'string-data'),
    sharedMemory: choiceFlag(f, 'shared-memory', ['none', 'system'] as const, 'none'),
    outputShmSize: intFlag(f, 'output-shared-memory-size', 102400, 1),
    streaming,
    sequenceLength: intFlag(f, 'sequence-length', 20, 1),
    sequenceIdRange: parseRange('sequence-id-range', last(f, 'sequence-id-range') ?? '1:4294967295', { start: 1, end: 4294967295, step: 1 }),
    headers,
    csvFile: last(f, 'filename'),
    verboseCsv: boolFlag(f, 'verbose-csv'),
    exportFile: last(f, 'profile-export-file'),
    reportFile: last(f, 'report-file'),
    verbose: boolFlag(f, 'verbose'),
  };
}
