/**
 * `nereid serve` flags: tritonserver's command line, read the way tritonserver reads it (GNU getopt_long, long
 * options only, by src/getopt.ts), into ServeOptions. Nothing here starts anything.
 *
 * getopt_long rules kept on purpose, because scripts written for tritonserver rely on them:
 * - `--flag=value` and `--flag value`; a flag that takes a value always takes the next argument, even one that
 *   starts with `--` (so `--strict-readiness --log-info=true` is an error about the value of --strict-readiness);
 * - an unambiguous prefix of a flag name works (`--model-repo=x`); a prefix that fits two different flags is an
 *   error, unless the names are aliases of one flag (`--model-` alone is ambiguous, `--model-s` is --model-store);
 * - `--` ends the flags; any argument that is not a flag is an error ("Unexpected argument"), reported after the
 *   flags are checked, since getopt moves non-options to the end.
 * Where tritonserver's own parser is loose (std::stoi accepts "12abc") Nereid is strict: integers must be whole.
 */
import { parseTraceConfig } from '../observability/trace/config.js';
import { re2Pattern } from '../frontends/re2-pattern.js';
import { isCloudUrl, parseCloudUrl } from '../repository/cloud/url.js';
import type { LogFormat, LogSettings } from '../observability/logger.js';
import { DEFAULT_SERVER_ID, type ModelControlMode, type ServerOptions } from '../server/options.js';
import { DEFAULT_MAX_MAPPED_BYTES, DEFAULT_MAX_REGIONS } from '../sharedmemory/registry.js';
import { getopt, GetoptError, type GetoptOption, type GetoptProblem } from '../getopt.js';
import { formatUsage, type UsageEntry } from './usage.js';

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

export interface ServeOptions {
  server: ServerOptions;
  http: { allow: boolean; port: number; address: string; maxInputSize: number };
  /** --exit-drain-secs: after SIGTERM, seconds the server stays unready but serving before it stops. */
  exitDrainSecs: number;
  grpc: { allow: boolean; port: number; address: string };
  metrics: { allow: boolean; port: number; address: string; intervalMs: number };
  /** Nereid's OpenAI-compatible frontend: on only when --openai-port is given. */
  openai: { allow: boolean; port: number; address: string; corsOrigins: string[]; responseStoreUrl?: string };
  log: LogSettings;
  help: boolean;
  /**
   * Accepted flags with no field above, by canonical flag name without `--` (aliases resolved): every
   * occurrence in order, already validated, enums lower-cased and booleans as 'true'/'false'. For a flag given
   * once, the last value counts.
   */
  extra: Record<string, string[]>;
  /** Deprecation notices tritonserver prints while parsing; the caller decides where they go. */
  warnings: string[];
}

/** ServerOptions with every field the flags decide filled in. */
interface ServerDraft {
  modelRepositories: string[];
  modelControlMode: ModelControlMode;
  loadModels: string[];
  repositoryPollSecs: number;
  repositoryCacheDir?: string;
  strictModelConfig: boolean;
  modelConfigName: string;
  exitOnError: boolean;
  strictReadiness: boolean;
  exitTimeoutSecs: number;
  sequenceStateStore?: string;
  backendConfig: Record<string, Record<string, string>>;
  id: string;
  modelLoadThreadCount: number;
  modelLoadRetryCount?: number;
  modelNamespacing?: boolean;
  modelMemoryBudget?: number;
  modelLoadOnDemand?: boolean;
  modelLoadWaitSecs?: number;
  modelMaxInstances?: number;
  serverMaxInstances?: number;
  rateLimit?: 'off' | 'execution_count';
  rateLimitResources?: { name: string; count: number; device: number | undefined }[];
  responseCache?: Record<string, Record<string, string>>;
  allowClientShm?: boolean;
  shmMaxRegions?: number;
  shmMaxMappedBytes?: number;
  trace?: string[];
}

interface Draft extends Omit<ServeOptions, 'server' | 'metrics' | 'openai'> {
  server: ServerDraft;
  metrics: { allow: boolean; port: number; address: string | null; intervalMs: number };
  openai: { allow: boolean; port: number; address: string | null; corsOrigins: string[]; responseStoreUrl?: string };
  strictModelConfigGiven: boolean;
  disableAutoComplete: boolean;
  cacheSizeGiven: boolean;
  cacheConfigGiven: boolean;
  /** Restricted categories already claimed, per flag: a category may sit in one group only. */
  restricted: Record<string, Set<string>>;
  /** Flags given that have no effect, by the reason: one warning line per reason. */
  ignored: Map<string, string[]>;
}

function newDraft(): Draft {
  return {
    server: {
      modelRepositories: [], modelControlMode: 'none', loadModels: [], repositoryPollSecs: 15,
      strictModelConfig: false, modelConfigName: '', exitOnError: true, strictReadiness: true,
      exitTimeoutSecs: 30, backendConfig: {}, id: DEFAULT_SERVER_ID, modelLoadThreadCount: 4,
    },
    http: { allow: true, port: 8000, address: '0.0.0.0', maxInputSize: 67108864 },
    exitDrainSecs: 0,
    grpc: { allow: true, port: 8001, address: '0.0.0.0' },
    metrics: { allow: true, port: 8002, address: null, intervalMs: 2000 },
    openai: { allow: false, port: 9000, address: null, corsOrigins: [] },
    log: { info: true, warning: true, error: true, verbose: 0, format: 'default', file: '' },
    help: false,
    extra: {},
    warnings: [],
    strictModelConfigGiven: false,
    disableAutoComplete: false,
    cacheSizeGiven: false,
    cacheConfigGiven: false,
    restricted: {},
    ignored: new Map(),
  };
}

// ---------------------------------------------------------------------------------------------------------
// Value parsers. Each throws BadValue saying what was expected; the loop adds the flag's name and the value.

class BadValue extends Error {
  /** `said`: tritonserver's own refusal of the value, printed instead of "got …, expected …". */
  constructor(readonly expected: string, readonly said?: string) {
    super(said ?? expected);
  }
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function bool(v: string): boolean {
  const l = v.toLowerCase();
  if (l === 'true' || l === 'on' || l === '1') return true;
  if (l === 'false' || l === 'off' || l === '0') return false;
  throw new BadValue('a boolean: true, on, 1, false, off or 0 (any case)');
}

/** A size in bytes: digits, optionally followed by K, M or G (powers of 1024, any case). */
function byteSize(v: string): number {
  const m = /^(\d+)([kmg]?)i?b?$/i.exec(v.trim());
  if (!m) throw new BadValue('a size in bytes, such as 8G, 512M or 1073741824');
  const n = Number(m[1]) * 1024 ** ' kmg'.indexOf((m[2] || ' ').toLowerCase());
  if (!Number.isSafeInteger(n) || n <= 0) throw new BadValue('a size in bytes greater than 0');
  return n;
}

function int(v: string, min = INT32_MIN, max = INT32_MAX, what = `an integer in [${min}, ${max}]`): number {
  if (!/^[+-]?\d+$/.test(v)) throw new BadValue(what);
  const n = Number(v);
  if (n < min || n > max) throw new BadValue(what);
  return n;
}

/** A 64-bit integer; BigInt for the range check, then a Number (exact up to 2^53, far above any real size). */
function int64(v: string, min = -(2n ** 63n), what = 'a 64-bit integer'): number {
  if (!/^[+-]?\d+$/.test(v)) throw new BadValue(what);
  const n = BigInt(v);
  if (n < min || n > 2n ** 63n - 1n) throw new BadValue(what);
  return Number(n);
}

function float(v: string): number {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(v)) throw new BadValue('a number');
  return Number(v);
}

const port = (v: string): number => int(v, 0, 65535, 'a port number in [0, 65535] (0 picks a free port)');

/** Case-insensitive choice, returned lower-cased. */
function choice<T extends string>(v: string, choices: readonly T[]): T {
  const l = v.toLowerCase();
  const hit = choices.find((c) => c === l);
  if (hit === undefined) throw new BadValue(`one of ${choices.join(', ')} (any case)`);
  return hit;
}

function keep(d: Draft, id: string, value: string): void {
  (d.extra[id] ??= []).push(value);
}

/**
 * `[<name>,]<setting>=<value>`. A comma only names a section when it comes before the first '=', so a value may
 * contain commas (`key=a,b`). `nameRequired` makes `<setting>=<value>` alone an error.
 */
function sectioned(v: string, syntax: string, nameRequired: boolean): { name: string; key: string; value: string } {
  const eq = v.indexOf('=');
  const comma = v.indexOf(',');
  const named = comma >= 0 && (eq < 0 || comma < eq);
  const name = named ? v.slice(0, comma) : '';
  const key = v.slice(named ? comma + 1 : 0, eq < 0 ? undefined : eq);
  const value = v.slice(eq + 1);
  if (eq < 0 || key === '' || value === '' || (named && name === '') || (nameRequired && name === '')) {
    throw new BadValue(syntax);
  }
  return { name, key, value };
}

const BACKEND_CONFIG_SYNTAX = "'<backend>,<setting>=<value>' or '<setting>=<value>' (global)";

function backendConfig(d: Draft, v: string): void {
  const { name, key, value } = sectioned(v, BACKEND_CONFIG_SYNTAX, false);
  (d.server.backendConfig[name] ??= {})[key] = value;
}

function metricsConfig(v: string): string {
  const eq = v.indexOf('=');
  const comma = v.indexOf(',');
  // tritonserver has no per-section metrics settings yet, so a ',' before '=' is refused rather than guessed at.
  if (eq <= 0 || eq === v.length - 1 || (comma >= 0 && comma < eq)) throw new BadValue("'<setting>=<value>'");
  return v;
}

const TRACE_LEVELS = ['off', 'false', 'true', 'on', 'min', 'max', 'timestamps', 'tensors'] as const;
const TRACE_CONFIG_SYNTAX = "'<setting>=<value>' or '<mode>,<setting>=<value>' with mode triton or opentelemetry";

function traceConfig(v: string): string {
  const { name, key, value } = sectioned(v, TRACE_CONFIG_SYNTAX, false);
  if (name !== '') choice(name, ['triton', 'opentelemetry']);
  if (name === '' && key === 'level') choice(value, TRACE_LEVELS);
  if (name === '' && key === 'mode') choice(value, ['triton', 'opentelemetry']);
  if (name === '' && (key === 'rate' || key === 'count')) int(value);
  if (name.toLowerCase() === 'triton' && key === 'log-frequency') int(value);
  return v;
}

function rateLimitResource(v: string): string {
  const syntax = "'<name>:<count>' or '<name>:<count>:<device>' with integer count and device";
  const parts = v.split(':');
  if (parts.length < 2 || parts.length > 3 || parts[0] === '') throw new BadValue(syntax);
  for (const n of parts.slice(1)) if (!/^[+-]?\d+$/.test(n)) throw new BadValue(syntax);
  return v;
}

/** `<first>:<second>` where each part is checked by its own parser. */
function pair(v: string, syntax: string, first: (s: string) => unknown, second: (s: string) => unknown): string {
  const colon = v.indexOf(':');
  if (colon < 0) throw new BadValue(syntax);
  try {
    first(v.slice(0, colon));
    second(v.slice(colon + 1));
  } catch {
    throw new BadValue(syntax);
  }
  return v;
}

/** In tritonserver's words for 0 or less, worded as its sibling check of --grpc-max-response-pool-size. */
function maxInputSize(v: string): number {
  const n = int64(v, -(2n ** 63n), 'an integer greater than 0 (bytes)');
  if (n <= 0) throw new BadValue('an integer greater than 0 (bytes)', 'Error: --http-max-input-size must be greater than 0.');
  return n;
}

const RESTRICTED_CATEGORIES = [
  'health', 'metadata', 'inference', 'shared-memory', 'model-config', 'model-repository', 'statistics', 'trace',
  'logging',
] as const;

/**
 * `<category>[,<category>...]:<key>=<value>`; each category may appear in only one group of the same flag.
 * Refusals in tritonserver's words (its L0_http and L0_grpc start-up tests look for "unknown restricted api
 * 'model-reposit'" and "api 'health' can not be specified in multiple config groups"), with the categories.
 */
function restricted(d: Draft, id: string, v: string): string {
  const kind = id === 'grpc-restricted-protocol' ? 'protocol' : 'api';
  const categories = `categories: ${RESTRICTED_CATEGORIES.join(', ')}`;
  const syntax = `'<category>[,<category>...]:<key>=<value>' with ${categories}`;
  const colon = v.indexOf(':');
  const eq = v.indexOf('=', colon + 1);
  if (colon <= 0 || eq < 0 || eq === colon + 1 || eq === v.length - 1) {
    throw new BadValue(syntax, `--${id} option format is '<config name>:<setting>=<value>'. Got ${v} (${categories})`);
  }
  const claimed = (d.restricted[id] ??= new Set());
  for (const category of v.slice(0, colon).split(',')) {
    if (!(RESTRICTED_CATEGORIES as readonly string[]).includes(category)) {
      throw new BadValue(syntax, `unknown restricted ${kind} '${category}' (${categories})`);
    }
    if (claimed.has(category)) throw new BadValue(syntax, `restricted ${kind} '${category}' can not be specified in multiple config groups`);
    claimed.add(category);
  }
  return v;
}

function headerPattern(v: string): string {
  // tritonserver reads the pattern as RE2 (inline flags such as `(?-i)` included), translated once here.
  try {
    re2Pattern(v);
  } catch {
    throw new BadValue('a valid regular expression');
  }
  return v;
}

// ---------------------------------------------------------------------------------------------------------
// The flag table: tritonserver's flags, in its --help groups and order. Help texts are Nereid's own words.

/**
 * What giving a flag does in Nereid. Every tritonserver flag has one, so that none is accepted and then
 * dropped without a word: it takes effect, or it warns why it cannot (once per reason, whatever the number of
 * flags), or the start is refused. `when` narrows a warning or a refusal to the values it concerns.
 */
export type FlagEffect =
  | { readonly kind: 'implemented'; readonly note?: string }
  | { readonly kind: 'warns'; readonly why: string; readonly when?: Values; readonly byFrontend?: true }
  | { readonly kind: 'refused'; readonly why: string; readonly when?: Values };

/** The values a warning or refusal concerns: a test, and how the flag table names them. */
export interface Values {
  readonly test: (value: string) => boolean;
  readonly label: string;
}

interface FlagSpec extends UsageEntry, GetoptOption {
  /** The canonical name: an alias carries the id of the flag it stands for. */
  readonly id: string;
  readonly set: (d: Draft, value: string, id: string) => void;
  readonly effect: FlagEffect;
}

function flag(group: string, name: string, arg: string | null, def: string, help: string, set: FlagSpec['set'], id = name): FlagSpec {
  return { group, name, arg, def, help, set, id, takes: arg === null ? 'nothing' : 'value', effect: { kind: 'implemented' } };
}

/** A flag with no effect in Nereid: giving it logs `--<flag> has no effect: <why>` (when `when` holds). */
function warns(spec: FlagSpec, why: string, when?: Values): FlagSpec {
  return { ...spec, effect: { kind: 'warns', why, ...(when ? { when } : {}) } };
}

/** As warns(), the warning written by the frontend's own option builder (cli/http-options, cli/grpc-options). */
function warnsInFrontend(spec: FlagSpec, why: string, when?: Values): FlagSpec {
  return { ...spec, effect: { kind: 'warns', why, byFrontend: true, ...(when ? { when } : {}) } };
}

/** A flag Nereid cannot honour: giving it (with a value `when` accepts) stops the start with exit status 2. */
function refused(spec: FlagSpec, why: string, when?: Values): FlagSpec {
  return { ...spec, effect: { kind: 'refused', why, ...(when ? { when } : {}) } };
}

function noted(spec: FlagSpec, note: string): FlagSpec {
  return { ...spec, effect: { kind: 'implemented', note } };
}

const TRUE: Values = { test: (v) => bool(v), label: 'true' };
const NOT_ZERO: Values = { test: (v) => Number(v) !== 0, label: 'other than 0' };
const NEREID_OWN = "Nereid's own flag";
const NO_GPU = 'Nereid runs models on the CPU only: there is no GPU or CUDA device to configure';

const BOOL_ARG = '<boolean>';
const keepBool: FlagSpec['set'] = (d, v, id) => keep(d, id, String(bool(v)));
const keepInt: FlagSpec['set'] = (d, v, id) => keep(d, id, String(int(v)));
const keepString: FlagSpec['set'] = (d, v, id) => keep(d, id, v);
/**
 * TLS flags of a port, with Triton's names for gRPC's (--grpc-use-ssl and the like); Nereid's own for HTTP
 * and OpenAI. A flag of `fallback`'s port stands in for one not given (the OpenAI port takes HTTP's).
 */
function sslFlags(group: string, prefix: string, what: string, fallback: string): FlagSpec[] {
  const unset = fallback === '' ? '' : `the value of --${fallback}-`;
  const dflt = (name: string, value: string): string => (fallback === '' ? value : `${unset}${name}`);
  const own = (spec: FlagSpec): FlagSpec => noted(spec, NEREID_OWN);
  return [
    own(flag(group, `${prefix}-use-ssl`, BOOL_ARG, dflt('use-ssl', 'false'), `Serve ${what} over TLS (1.2 or later). The certificate and key files are read again when they change: a rotated certificate serves new connections without a restart.`, keepBool)),
    own(flag(group, `${prefix}-use-ssl-mutual`, BOOL_ARG, dflt('use-ssl-mutual', 'false'), `Serve ${what} over TLS and require client certificates. Giving this flag also turns --${prefix}-use-ssl on.`,
      (d, v, id) => { keep(d, id, String(bool(v))); keep(d, `${prefix}-use-ssl`, 'true'); })),
    own(flag(group, `${prefix}-server-cert`, '<path>', dflt('server-cert', ''), `PEM file with the server certificate (with --${prefix}-use-ssl).`, keepString)),
    own(flag(group, `${prefix}-server-key`, '<path>', dflt('server-key', ''), `PEM file with the server key (with --${prefix}-use-ssl).`, keepString)),
    own(flag(group, `${prefix}-root-cert`, '<path>', dflt('root-cert', ''), 'PEM file with the root certificate that client certificates must chain to.', keepString)),
  ];
}

const deprecatedTrace = (replacement: string): string =>
  `'--trace-…' flags other than --trace-config are deprecated; use '--trace-config ${replacement}'.`;

const SERVER = 'Server';
const LOGGING = 'Logging';
const REPO = 'Model Repository';
const HTTP = 'HTTP';
const GRPC = 'GRPC';
const METRICS = 'Metrics';
const OPENAI = 'OpenAI (Nereid)';
const TRACING = 'Tracing';
const KEYS = 'API Keys (Nereid)';
const BACKEND = 'Backend';
const REPOAGENT = 'Repository Agent';
const CACHE = 'Response Cache';
const RATE = 'Rate Limiter';
const MEMORY = 'Memory/Device Management';
const SAGEMAKER = 'SageMaker';
const VERTEX = 'Vertex AI';
const DEPRECATED = 'DEPRECATED';

const FLAGS: readonly FlagSpec[] = [
  flag('', 'help', null, '', 'Print this usage and exit.', (d) => { d.help = true; }),

  flag(SERVER, 'id', '<string>', DEFAULT_SERVER_ID, 'Name this server reports in its metadata.', (d, v) => { d.server.id = v; }),
  flag(SERVER, 'exit-timeout-secs', '<integer>', '30', 'On shutdown, seconds to wait for inferences in flight before exiting anyway. Negative values mean 0.',
    (d, v) => { d.server.exitTimeoutSecs = Math.max(0, int(v)); }),
  noted(flag(SERVER, 'exit-drain-secs', '<integer>', '0', "On SIGTERM, seconds the server keeps serving new requests while /v2/health/ready already answers not ready, so that a load balancer's health check takes it out first; it then refuses new requests and finishes those in flight. Part of --exit-timeout-secs, so it must be less. 0: refuse new requests at once. Nereid's own flag.",
    (d, v) => { d.exitDrainSecs = int(v, 0, INT32_MAX, 'an integer of at least 0 (seconds)'); }), NEREID_OWN),
  noted(flag(SERVER, 'sequence-state-store', '<redis://host:port[/db]>', "'' (off)", "Keep the sequence batcher's sequences (step count, implicit state, the last step's reply) in this Redis, so that replicas sharing it continue each other's sequences, also after one is killed; a retried step (same request id and inputs) gets its first reply and is not applied twice. Nereid's own flag.",
    (d, v) => { if (!/^redis:\/\/[^/]+(\/\d+)?$/.test(v)) throw new BadValue('redis://<host>:<port>[/<db>]'); d.server.sequenceStateStore = v; }), NEREID_OWN),
  flag(SERVER, 'allow-client-shm', BOOL_ARG, 'false', 'Let clients register and use system shared memory regions.', (d, v) => { d.server.allowClientShm = bool(v); }),
  noted(flag(SERVER, 'shm-max-regions', '<integer>', String(DEFAULT_MAX_REGIONS),
    "Nereid's: most system shared memory regions the server maps at once for its clients (an unregistered region counts until its last request ends); past it, registering answers RESOURCE_EXHAUSTED.",
    (d, v) => { d.server.shmMaxRegions = int(v, 1, INT32_MAX, 'an integer greater than 0'); }), NEREID_OWN),
  noted(flag(SERVER, 'shm-max-mapped-bytes', '<integer>', `${DEFAULT_MAX_MAPPED_BYTES} (64 GiB)`,
    "Nereid's: most bytes of client shared memory the server maps at once, counted in whole pages; past it, registering answers RESOURCE_EXHAUSTED.",
    (d, v) => { d.server.shmMaxMappedBytes = int64(v, 1n, 'an integer greater than 0 (bytes)'); }), NEREID_OWN),

  flag(LOGGING, 'log-verbose', '<integer>', '0', 'Verbose logging level: 0 turns verbose logging off, N >= 1 prints verbose messages up to level N. true means 1, false means 0.',
    (d, v) => { d.log.verbose = logVerbose(v); }),
  flag(LOGGING, 'log-info', BOOL_ARG, 'true', 'Print info messages.', (d, v) => { d.log.info = bool(v); }),
  flag(LOGGING, 'log-warning', BOOL_ARG, 'true', 'Print warning messages.', (d, v) => { d.log.warning = bool(v); }),
  flag(LOGGING, 'log-error', BOOL_ARG, 'true', 'Print error messages.', (d, v) => { d.log.error = bool(v); }),
  flag(LOGGING, 'log-format', '<default|ISO8601>', 'default', "Line prefix: 'default' is \"LMMDD hh:mm:ss.uuuuuu\", 'ISO8601' is \"YYYY-MM-DDThh:mm:ssZ L\" (L = level letter). Case-sensitive.",
    (d, v) => { d.log.format = logFormat(v); }),
  flag(LOGGING, 'log-file', '<path>', "'' (stderr)", 'Append log lines to this file instead of printing them on stderr.', (d, v) => { d.log.file = v; }),

  noted(flag(REPO, 'model-store', '<path>', '', 'Same as --model-repository.', addRepository, 'model-repository'), 'same as --model-repository'),
  noted(flag(REPO, 'model-repository', '<path>', '', 'A model repository: a directory, or s3://bucket/path, s3://host:port/bucket/path, s3://https://host:port/bucket/path, gs://bucket/path, as://account/container/path. Required; repeat it to serve several repositories (a model name must then be unique across all of them, unless --model-namespacing).', addRepository),
    'models at URLs download into a cache kept between starts (--repository-cache-dir), where Triton downloads afresh at each load'),
  noted(flag(REPO, 'repository-cache-dir', '<path>', "'' (nereid-repository-cache in the OS temp dir)", "Where models of s3://, gs:// and as:// repositories are downloaded and kept between starts: an unchanged file is not downloaded again. TRITON_AWS_MOUNT_DIRECTORY, TRITON_GCS_MOUNT_DIRECTORY and TRITON_AZURE_MOUNT_DIRECTORY win for their store. Nereid's own flag.",
    (d, v) => { if (v === '') throw new BadValue('a directory path'); d.server.repositoryCacheDir = v; }), NEREID_OWN),
  flag(REPO, 'exit-on-error', BOOL_ARG, 'true', 'Fail the start when anything, such as a model load, fails during initialization.', (d, v) => { d.server.exitOnError = bool(v); }),
  flag(REPO, 'disable-auto-complete-config', null, '', 'Do not fill in missing model configuration from the model files: every model needs a complete config.pbtxt. Implies --strict-model-config=true.',
    (d) => { d.disableAutoComplete = true; }),
  flag(REPO, 'strict-readiness', BOOL_ARG, 'true', 'true: /v2/health/ready reports ready only while every model is ready. false: ready whenever the server answers.',
    (d, v) => { d.server.strictReadiness = bool(v); }),
  flag(REPO, 'model-control-mode', '<none|poll|explicit>', 'none', 'none: load every model at startup, never change. poll: also rescan the repositories every --repository-poll-secs and apply changes. explicit: load only --load-model models at startup, then load and unload through the repository API. Any case.',
    (d, v) => { d.server.modelControlMode = choice(v, ['none', 'poll', 'explicit']); }),
  flag(REPO, 'repository-poll-secs', '<integer>', '15', 'Seconds between two scans of the repositories; used only with --model-control-mode=poll.',
    (d, v) => { d.server.repositoryPollSecs = Math.max(0, int(v)); }),
  flag(REPO, 'load-model', '<name>', '', "A model to load at startup; repeatable. Only with --model-control-mode=explicit. '*' loads every model and must then be the only --load-model.",
    (d, v) => { if (!d.server.loadModels.includes(v)) d.server.loadModels.push(v); }),
  flag(REPO, 'model-config-name', '<string>', "'' (config.pbtxt)", 'Use <model>/configs/<name>.pbtxt as the config of each model that has one.',
    (d, v) => { d.server.modelConfigName = configName(v); }),
  flag(REPO, 'model-load-thread-count', '<integer>', '4', 'How many models load at the same time (at least 1).',
    (d, v) => { d.server.modelLoadThreadCount = Math.max(1, int(v)); }),
  noted(flag(REPO, 'model-max-instances', '<integer>', '128', "Most instances one model version may have (its instance_group counts summed, at least 1); a load asking for more fails. Nereid's own flag.",
    (d, v) => { d.server.modelMaxInstances = int(v, 1, INT32_MAX, 'an integer of at least 1'); }), NEREID_OWN),
  noted(flag(REPO, 'server-max-instances', '<integer>', '1024', "Most instances of all loaded model versions together (at least 1); a load that would pass it fails. Nereid's own flag.",
    (d, v) => { d.server.serverMaxInstances = int(v, 1, INT32_MAX, 'an integer of at least 1'); }), NEREID_OWN),
  flag(REPO, 'model-load-retry-count', '<integer>', '0', 'How many more times the creation of a model version is tried after it failed, before its load fails. Negative values mean 0.',
    (d, v) => { d.server.modelLoadRetryCount = Math.max(0, int(v)); }),
  noted(flag(REPO, 'model-memory-budget', '<bytes>', "'' (none)", "Most memory the loaded models may take together, in bytes, or with a K, M or G suffix (powers of 1024). A load that would pass it first unloads the least recently used idle models; a model larger than the budget fails its load. Nereid's own flag.",
    (d, v) => { d.server.modelMemoryBudget = byteSize(v); }), NEREID_OWN),
  noted(flag(REPO, 'model-load-on-demand', BOOL_ARG, 'false', "Load a model of the repository when a request, metadata or ready call names it; in mode none nothing loads at start. Nereid's own flag.",
    (d, v) => { d.server.modelLoadOnDemand = bool(v); }), NEREID_OWN),
  noted(flag(REPO, 'model-load-wait-secs', '<integer>', '60', "Longest a request waits for its model's load on demand before it is answered UNAVAILABLE with Retry-After. Nereid's own flag.",
    (d, v) => { d.server.modelLoadWaitSecs = int(v, 0, INT32_MAX, 'an integer of at least 0 (seconds)'); }), NEREID_OWN),
  flag(REPO, 'model-namespacing', BOOL_ARG, 'false', 'Each repository is its own namespace: models of the same name in different repositories all load; a request naming such a model is refused as ambiguous, and an ensemble runs the steps of its own repository.',
    (d, v) => { d.server.modelNamespacing = bool(v); }),

  flag(HTTP, 'allow-http', BOOL_ARG, 'true', 'Serve the HTTP/REST protocol.', (d, v) => { d.http.allow = bool(v); }),
  flag(HTTP, 'http-address', '<address>', '0.0.0.0', 'Address the HTTP server binds to.', (d, v) => { d.http.address = v; }),
  flag(HTTP, 'http-port', '<integer>', '8000', 'Port of the HTTP server (0 picks a free port).', (d, v) => { d.http.port = port(v); }),
  warnsInFrontend(flag(HTTP, 'reuse-http-port', BOOL_ARG, 'false', 'Let several servers listen on the same HTTP port when all of them set this. Node.js 20 cannot: setting it true only warns.', keepBool),
    'Node.js 20 cannot share a listening port between processes', TRUE),
  flag(HTTP, 'http-header-forward-pattern', '<regex>', '', 'HTTP headers whose names match this regular expression (any case) are passed to models as request parameters.',
    (d, v, id) => keep(d, id, headerPattern(v))),
  warnsInFrontend(flag(HTTP, 'http-thread-count', '<integer>', '8', 'Threads serving HTTP in tritonserver. Ignored with a warning: Nereid serves HTTP on the event loop.', keepInt),
    'the HTTP server runs on the Node.js event loop'),
  flag(HTTP, 'http-max-input-size', '<integer>', '67108864', 'Largest HTTP request body in bytes, before and after decompression (greater than 0).',
    (d, v) => { d.http.maxInputSize = maxInputSize(v); }),
  noted(flag(HTTP, 'allow-console', BOOL_ARG, 'true on a loopback --http-address, false otherwise', "Serve the web console at /console/ on the HTTP port. It uses the public HTTP API from the browser, so --http-restricted-api, API keys and the model control mode apply to it as to any client. Nereid's own flag.", keepBool), NEREID_OWN),
  flag(HTTP, 'http-restricted-api', '<category>[,<category>...]:<header>=<value>', '', `Serve these API categories only to requests carrying header <header> with value <value>. Categories: ${RESTRICTED_CATEGORIES.join(', ')}. Repeatable; a category may appear in one group only.`,
    (d, v, id) => keep(d, id, restricted(d, id, v))),
  ...sslFlags(HTTP, 'http', 'HTTP', ''),

  flag(GRPC, 'allow-grpc', BOOL_ARG, 'true', 'Serve the gRPC protocol.', (d, v) => { d.grpc.allow = bool(v); }),
  flag(GRPC, 'grpc-address', '<address>', '0.0.0.0', 'Address the gRPC server binds to.', (d, v) => { d.grpc.address = v; }),
  flag(GRPC, 'grpc-port', '<integer>', '8001', 'Port of the gRPC server (0 picks a free port).', (d, v) => { d.grpc.port = port(v); }),
  warnsInFrontend(flag(GRPC, 'reuse-grpc-port', BOOL_ARG, 'false', 'Let several servers listen on the same gRPC port when all of them set this. Node.js 20 cannot: setting it true only warns.', keepBool),
    'Node.js 20 cannot share a listening port between processes', TRUE),
  flag(GRPC, 'grpc-header-forward-pattern', '<regex>', '', 'gRPC metadata whose keys match this regular expression (any case) are passed to models as request parameters.',
    (d, v, id) => keep(d, id, headerPattern(v))),
  warnsInFrontend(flag(GRPC, 'grpc-infer-thread-count', '<integer>', '2', 'Threads handling gRPC inference in tritonserver, 2 to 128. Checked, then ignored with a warning: Nereid serves gRPC on the event loop.',
    (d, v, id) => keep(d, id, String(int(v, 2, 128)))), 'the gRPC server runs on the Node.js event loop'),
  warnsInFrontend(flag(GRPC, 'grpc-infer-allocation-pool-size', '<integer>', '8', 'How many inference request/response objects tritonserver keeps for reuse. Ignored with a warning: Nereid keeps no such pool.', keepInt),
    'the gRPC server keeps no pool of request and response objects'),
  warnsInFrontend(flag(GRPC, 'grpc-max-response-pool-size', '<integer>', '2147483647 (no limit)', 'Most inference response objects alive at once in tritonserver (greater than 0). Checked, then ignored with a warning: Nereid keeps no such pool.',
    (d, v, id) => keep(d, id, String(int(v, 1)))), 'the gRPC server keeps no pool of response objects'),
  flag(GRPC, 'grpc-use-ssl', BOOL_ARG, 'false', 'Serve gRPC over TLS (1.2 or later). The certificate and key files are read again when they change: a rotated certificate serves new connections without a restart.', keepBool),
  flag(GRPC, 'grpc-use-ssl-mutual', BOOL_ARG, 'false', 'Serve gRPC over TLS and require client certificates. Giving this flag also turns --grpc-use-ssl on.',
    (d, v, id) => { keep(d, id, String(bool(v))); keep(d, 'grpc-use-ssl', 'true'); }),
  flag(GRPC, 'grpc-server-cert', '<path>', '', 'PEM file with the server certificate (with --grpc-use-ssl).', keepString),
  flag(GRPC, 'grpc-server-key', '<path>', '', 'PEM file with the server key (with --grpc-use-ssl).', keepString),
  flag(GRPC, 'grpc-root-cert', '<path>', '', 'PEM file with the root certificate that client certificates must chain to.', keepString),
  flag(GRPC, 'grpc-infer-response-compression-level', '<none|low|medium|high>', 'none', 'Compression of inference responses. Any case.',
    (d, v, id) => keep(d, id, choice(v, ['none', 'low', 'medium', 'high']))),
  flag(GRPC, 'grpc-max-decompressed-size', '<integer>', '67108864', 'Largest gRPC request message in bytes after decompression (greater than 0): inflating stops there and the call fails with RESOURCE_EXHAUSTED. Messages that arrive uncompressed may have up to 2147483647 bytes, as in tritonserver, which has no separate limit.',
    (d, v, id) => keep(d, id, String(int64(v, 1n, 'an integer greater than 0 (bytes)')))),
  flag(GRPC, 'grpc-keepalive-time', '<integer>', '7200000', 'Milliseconds between keepalive pings.', keepInt),
  flag(GRPC, 'grpc-keepalive-timeout', '<integer>', '20000', 'Milliseconds to wait for a keepalive ping to be acknowledged before closing the connection.', keepInt),
  noted(flag(GRPC, 'grpc-keepalive-permit-without-calls', BOOL_ARG, 'false', 'Allow keepalive pings on a connection with no call in flight. Nereid always does: false only warns.', keepBool),
    'always on: false warns'),
  warnsInFrontend(flag(GRPC, 'grpc-http2-max-pings-without-data', '<integer>', '2', 'Pings allowed while no data is sent; 0 means no limit. Nereid never limits them: other values only warn.', keepInt),
    'the gRPC server does not limit its pings while no data flows', NOT_ZERO),
  warnsInFrontend(flag(GRPC, 'grpc-http2-min-recv-ping-interval-without-data', '<integer>', '300000', 'Shortest accepted interval in milliseconds between client pings while no data is sent; a shorter one is a ping strike. Nereid counts no ping strikes: giving it only warns.', keepInt),
    'the gRPC server counts no ping strikes'),
  warnsInFrontend(flag(GRPC, 'grpc-http2-max-ping-strikes', '<integer>', '2', 'Ping strikes tolerated before the connection is closed; 0 means no limit. Nereid counts no ping strikes: other values only warn.', keepInt),
    'the gRPC server counts no ping strikes', NOT_ZERO),
  flag(GRPC, 'grpc-max-connection-age', '<integer>', '0 (unset)', 'Milliseconds a connection may live.', keepInt),
  flag(GRPC, 'grpc-max-connection-age-grace', '<integer>', '0 (unset)', 'Milliseconds a connection past its maximum age gets to finish its calls.', keepInt),
  flag(GRPC, 'grpc-restricted-protocol', '<category>[,<category>...]:<key>=<value>', '', `Serve these protocol categories only to calls carrying metadata 'triton-grpc-protocol-<key>' with value <value>. Categories: ${RESTRICTED_CATEGORIES.join(', ')}. Repeatable; a category may appear in one group only.`,
    (d, v, id) => keep(d, id, restricted(d, id, v))),

  flag(METRICS, 'allow-metrics', BOOL_ARG, 'true', 'Serve Prometheus metrics.', (d, v) => { d.metrics.allow = bool(v); }),
  warns(flag(METRICS, 'allow-gpu-metrics', BOOL_ARG, 'true', 'Report GPU metrics (only with --allow-metrics).', keepBool), `${NO_GPU}, so there are no GPU metrics`, TRUE),
  flag(METRICS, 'allow-cpu-metrics', BOOL_ARG, 'true', 'Report CPU and memory metrics (only with --allow-metrics).', keepBool),
  flag(METRICS, 'metrics-address', '<address>', 'the value of --http-address', 'Address the metrics server binds to.', (d, v) => { d.metrics.address = v; }),
  flag(METRICS, 'metrics-port', '<integer>', '8002', 'Port of the metrics server (0 picks a free port). Metrics are served in plain HTTP, never TLS (as in tritonserver).', (d, v) => { d.metrics.port = port(v); }),
  flag(METRICS, 'metrics-interval-ms', '<integer>', '2000', 'Milliseconds between two updates of the polled metrics (greater than 0).',
    (d, v) => { d.metrics.intervalMs = int(v, 1); }),
  flag(METRICS, 'metrics-config', '<setting>=<value>', '', 'A metrics setting: counter_latencies, histogram_latencies, summary_latencies, summary_quantiles. Repeatable.',
    (d, v, id) => keep(d, id, metricsConfig(v))),

  noted(flag(OPENAI, 'openai-port', '<integer>', 'off', "Serve the OpenAI-compatible API (/v1/models, /v1/completions, /v1/chat/completions, /v1/embeddings, /v1/responses, and Anthropic's /v1/messages) over the text and embedding models on this port (Triton's OpenAI frontend uses 9000; 0 picks a free port). Off unless given.",
    (d, v) => { d.openai.allow = true; d.openai.port = port(v); }), NEREID_OWN),
  noted(flag(OPENAI, 'openai-address', '<address>', 'the value of --http-address', 'Address the OpenAI-compatible server binds to.', (d, v) => { d.openai.address = v; }), NEREID_OWN),
  noted(flag(OPENAI, 'openai-cors-origin', '<origin>', 'none', "A browser origin (scheme://host[:port], or * for any) allowed to call the OpenAI-compatible API: its requests get CORS headers and its preflights are answered. Repeatable. Without it no CORS headers are sent (Triton's OpenAI frontend allows http://localhost).",
    (d, v) => { const o = corsOrigin(v); if (!d.openai.corsOrigins.includes(o)) d.openai.corsOrigins.push(o); }), NEREID_OWN),
  noted(flag(OPENAI, 'openai-response-store', '<redis://host:port[/db]>', "'' (in memory)", "Keep the Responses API's stored responses (store: true; for GET /v1/responses/{id} and previous_response_id) in this Redis, so that replicas sharing it see each other's; by default each server keeps its own in memory. Either way at most 1000 responses of up to 4 MiB each, for 24 hours, the oldest going first.",
    (d, v) => { if (!/^redis:\/\/[^/]+(\/\d+)?$/.test(v)) throw new BadValue('redis://<host>:<port>[/<db>]'); d.openai.responseStoreUrl = v; }), NEREID_OWN),
  ...sslFlags(OPENAI, 'openai', 'the OpenAI-compatible API', 'http'),

  noted(flag(KEYS, 'api-keys-file', '<path>', '', "Requests on the HTTP, gRPC and OpenAI ports must carry one of the keys of this file ('Authorization: Bearer <key>'; gRPC metadata 'authorization'), with the scope their API category needs. One key a line: ID SCOPES SHA256 (see 'nereid keys add'). Read again when it changes. Off unless given.",
    (d, v, id) => keep(d, id, v)), NEREID_OWN),
  noted(flag(KEYS, 'api-keys-protect-health', BOOL_ARG, 'false', 'Health endpoints (live, ready, model ready, grpc.health.v1) need a key with scope health too; by default they stay open for probes.',
    keepBool), NEREID_OWN),

  flag(TRACING, 'trace-config', '[<mode>,]<setting>=<value>', '', "A trace setting. Global settings: level (OFF, TIMESTAMPS, TENSORS; repeatable, they add up), rate (trace one request in N), count (-1: no limit), mode (triton or opentelemetry). With a mode: triton,file / triton,log-frequency; opentelemetry,url / resource=<key>=<value> / bsp_max_queue_size / bsp_schedule_delay / bsp_max_export_batch_size, and Nereid's opentelemetry,nereid_stage_spans=true (a span per stage). Repeatable.",
    (d, v, id) => trace(d, id, traceConfig(v))),

  warns(flag(BACKEND, 'backend-directory', '<path>', '/opt/tritonserver/backends', 'Directory searched for backends. Ignored with a warning: Nereid\'s backends are built in.', keepString),
    "Nereid's backends are built in; it loads no backend libraries from a directory"),
  flag(BACKEND, 'backend-config', '[<backend>,]<setting>=<value>', '', 'A backend setting, for one backend or, without a backend name, for all of them (a backend-specific setting wins). Repeatable.',
    (d, v) => backendConfig(d, v)),

  warns(flag(REPOAGENT, 'repoagent-directory', '<path>', '/opt/tritonserver/repoagents', 'Directory searched for repository agents. Ignored with a warning: Nereid has none.', keepString),
    'Nereid has no repository agents'),

  flag(CACHE, 'cache-config', '<cache>,<setting>=<value>', '', "A response cache setting, such as local,size=1048576. Any cache flag turns the server's response cache on. Repeatable.",
    (d, v, id) => {
      d.cacheConfigGiven = true;
      const { name, key, value } = sectioned(v, "'<cache>,<setting>=<value>'", true);
      keep(d, id, v);
      ((d.server.responseCache ??= {})[name] ??= {})[key] = value;
    }),
  warns(flag(CACHE, 'cache-directory', '<path>', '/opt/tritonserver/caches', 'Directory searched for cache implementations. Ignored with a warning: Nereid\'s caches (local, redis) are built in.', keepString),
    "Nereid's response caches (local, redis) are built in; it loads no cache libraries from a directory"),

  flag(RATE, 'rate-limit', '<execution_count|off>', 'off', 'execution_count: run a model instance only when the resources it declares are free, favouring priority and the least-used instance. off: run as soon as an instance is free. Any case.',
    (d, v, id) => {
      keep(d, id, choice(v, ['execution_count', 'off']));
      d.server.rateLimit = v.toLowerCase() === 'execution_count' ? 'execution_count' : 'off';
    }),
  flag(RATE, 'rate-limit-resource', '<name>:<count>[:<device>]', '', 'How many units of a rate-limiter resource exist, on one device or, without <device>, on every device. Repeatable.',
    (d, v, id) => {
      keep(d, id, rateLimitResource(v));
      const [name, count, device] = v.split(':');
      (d.server.rateLimitResources ??= []).push({ name: name!, count: Number(count), device: device === undefined ? undefined : Number(device) });
    }),

  warns(flag(MEMORY, 'pinned-memory-pool-byte-size', '<integer>', '268435456', 'Bytes of pinned host memory to pool for device transfers. Ignored with a warning: no device to transfer to.', (d, v, id) => keep(d, id, String(int64(v)))),
    `${NO_GPU}, so no pinned memory for transfers to one`),
  warns(flag(MEMORY, 'cuda-memory-pool-byte-size', '<gpu>:<bytes>', '67108864 per GPU', 'Bytes of CUDA memory to pool on one GPU. Repeatable, once per GPU. Ignored with a warning: CPU only.',
    (d, v, id) => keep(d, id, pair(v, "'<gpu>:<bytes>' (two integers)", int, int64))), NO_GPU),
  warns(flag(MEMORY, 'cuda-virtual-address-size', '<gpu>:<bytes>', '1073741824 per GPU', 'CUDA virtual address space per growable implicit state on one GPU. Repeatable. Ignored with a warning: CPU only.',
    (d, v, id) => keep(d, id, pair(v, "'<gpu>:<bytes>' (two integers)", int, int64))), NO_GPU),
  warns(flag(MEMORY, 'min-supported-compute-capability', '<number>', '0.0 (CPU build)', 'GPUs below this CUDA compute capability are not used. Ignored with a warning: CPU only.', (d, v, id) => keep(d, id, String(float(v)))),
    NO_GPU),
  warns(flag(MEMORY, 'buffer-manager-thread-count', '<integer>', '0', 'Threads that copy tensor data. Ignored with a warning: Nereid keeps no such threads.', keepInt),
    'tensor data is copied where it is received or produced; there are no buffer manager threads to size'),
  warns(flag(MEMORY, 'host-policy', '<policy>,<setting>=<value>', '', 'A host policy setting: numa-node or cpu-cores. Repeatable. Ignored with a warning: Nereid does not bind instances to NUMA nodes or cores.',
    (d, v, id) => { sectioned(v, "'<policy>,<setting>=<value>'", true); keep(d, id, v); }), 'Nereid does not bind model instances to NUMA nodes or CPU cores'),
  warns(flag(MEMORY, 'model-load-gpu-limit', '<device>:<fraction>', '', 'Refuse to load models on a GPU whose memory use is above this fraction. Ignored with a warning: CPU only.',
    (d, v, id) => keep(d, id, pair(v, "'<device>:<fraction>' (an integer and a number)", int, float))), NO_GPU),
  warns(flag(MEMORY, 'enable-peer-access', BOOL_ARG, 'true', 'Enable peer access between GPUs. Ignored with a warning: CPU only.', keepBool), NO_GPU),

  refused(flag(SAGEMAKER, 'allow-sagemaker', BOOL_ARG, 'false', 'Serve the SageMaker protocol. Nereid has no SageMaker endpoint: true is refused.', keepBool),
    'Nereid has no SageMaker endpoint', TRUE),
  refused(flag(SAGEMAKER, 'sagemaker-port', '<integer>', '8080', 'Port of the SageMaker endpoint. Refused: Nereid has none.', keepInt), 'Nereid has no SageMaker endpoint'),
  refused(flag(SAGEMAKER, 'sagemaker-safe-port-range', '<from>-<to>', '', 'Ports the SageMaker endpoint may use. Refused: Nereid has none.', keepString), 'Nereid has no SageMaker endpoint'),
  refused(flag(SAGEMAKER, 'sagemaker-thread-count', '<integer>', '8', 'Threads of the SageMaker endpoint. Refused: Nereid has none.', keepInt), 'Nereid has no SageMaker endpoint'),
  refused(flag(VERTEX, 'allow-vertex-ai', BOOL_ARG, 'false', 'Serve the Vertex AI protocol. Nereid has no Vertex AI endpoint: true is refused.', keepBool),
    'Nereid has no Vertex AI endpoint', TRUE),
  refused(flag(VERTEX, 'vertex-ai-port', '<integer>', '8080', 'Port of the Vertex AI endpoint. Refused: Nereid has none.', keepInt), 'Nereid has no Vertex AI endpoint'),
  refused(flag(VERTEX, 'vertex-ai-thread-count', '<integer>', '8', 'Threads of the Vertex AI endpoint. Refused: Nereid has none.', keepInt), 'Nereid has no Vertex AI endpoint'),
  refused(flag(VERTEX, 'vertex-ai-default-model', '<name>', '', 'Model the Vertex AI endpoint serves by default. Refused: Nereid has none.', keepString), 'Nereid has no Vertex AI endpoint'),

  flag(DEPRECATED, 'strict-model-config', BOOL_ARG, 'false', 'Deprecated, use --disable-auto-complete-config. true: every model needs a complete config.pbtxt.',
    (d, v) => {
      d.warnings.push("Warning: '--strict-model-config' has been deprecated! Please use '--disable-auto-complete-config' instead.");
      d.strictModelConfigGiven = true;
      d.server.strictModelConfig = bool(v);
    }),
  flag(DEPRECATED, 'response-cache-byte-size', '<integer>', '', 'Deprecated, use --cache-config local,size=<bytes>. Cannot be combined with --cache-config.',
    (d, v, id) => {
      d.warnings.push("Warning: '--response-cache-byte-size' has been deprecated! Please use '--cache-config local,size=<bytes>' instead.");
      d.cacheSizeGiven = true;
      keep(d, id, String(int64(v)));
      d.server.responseCache = { local: { size: String(int64(v)) } };
    }),
  flag(DEPRECATED, 'trace-file', '<path>', '', deprecatedTrace('triton,file=<path>'), (d, v, id) => deprecated(d, id, v, `triton,file=${v}`)),
  flag(DEPRECATED, 'trace-level', '<level>', 'OFF', deprecatedTrace('level=<OFF|TIMESTAMPS|TENSORS>'), (d, v, id) => deprecated(d, id, choice(v, TRACE_LEVELS), `level=${v}`)),
  flag(DEPRECATED, 'trace-rate', '<integer>', '1000', deprecatedTrace('rate=<N>'), (d, v, id) => deprecated(d, id, String(int(v)), `rate=${int(v)}`)),
  flag(DEPRECATED, 'trace-count', '<integer>', '-1', deprecatedTrace('count=<N>'), (d, v, id) => deprecated(d, id, String(int(v)), `count=${int(v)}`)),
  flag(DEPRECATED, 'trace-log-frequency', '<integer>', '0', deprecatedTrace('triton,log-frequency=<N>'), (d, v, id) => deprecated(d, id, String(int(v)), `triton,log-frequency=${int(v)}`)),
];

/** An origin as a browser sends it in Origin (scheme://host[:port], no path), or `*`. */
function corsOrigin(v: string): string {
  if (v === '*') return v;
  let origin: string | undefined;
  try {
    origin = new URL(v).origin;
  } catch {
    origin = undefined;
  }
  if (origin !== v) throw new BadValue("an origin such as 'https://app.example.com' (scheme://host[:port], no path or trailing slash) or '*'");
  return v;
}

function addRepository(d: Draft, v: string): void {
  if (v === '') throw new BadValue('a directory path');
  const url = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(v);
  if (url && !isCloudUrl(v)) {
    throw new FlagError(`--model-repository ${v}: ${url[1]}:// is not a repository scheme; give a directory or an s3://, gs:// or as:// URL`);
  }
  if (url) {
    try {
      parseCloudUrl(v);
    } catch (e) {
      throw new FlagError(`--model-repository ${(e as Error).message}`);
    }
  }
  // tritonserver keeps repositories in a set: giving one twice serves it once.
  if (!d.server.modelRepositories.includes(v)) d.server.modelRepositories.push(v);
}

function logVerbose(v: string): number {
  const l = v.toLowerCase();
  if (l === 'true') return 1;
  if (l === 'false') return 0;
  return Math.max(0, int(v, INT32_MIN, INT32_MAX, 'an integer >= 0, true (1) or false (0)'));
}

function logFormat(v: string): LogFormat {
  if (v !== 'default' && v !== 'ISO8601') throw new BadValue("'default' or 'ISO8601' (case-sensitive)");
  return v;
}

function configName(v: string): string {
  if (v === '' || /\s/.test(v)) throw new BadValue('a non-empty name without spaces');
  return v;
}

function deprecated(d: Draft, id: string, v: string, entry: string): void {
  d.warnings.push(`Warning: '--${id}' has been deprecated and will be removed in future releases. Please use '--trace-config' instead.`);
  trace(d, id, v, entry);
}

/** A trace setting kept as given (for the flag listing) and as the --trace-config entry the server reads. */
function trace(d: Draft, id: string, v: string, entry = v): void {
  keep(d, id, v);
  (d.server.trace ??= []).push(entry);
}

/** Every flag tritonserver has (and Nereid's own), aliases included, with what giving it does in Nereid. */
export const FLAG_EFFECTS: readonly { name: string; id: string; group: string; arg: string | null; effect: FlagEffect }[] =
  FLAGS.map((f) => ({ name: f.name, id: f.id, group: f.group, arg: f.arg, effect: f.effect }));

/** Every accepted flag name (aliases included), without `--`. */
export const FLAG_NAMES: readonly string[] = FLAGS.map((f) => f.name);

/** One flag as the web console's server view lists it (GET /v2/nereid/server). */
export interface FlagInEffect {
  readonly name: string;
  readonly value: string;
  /** false: the flag was not given, and `value` is its default as --help words it. */
  readonly given: boolean;
}

/**
 * The flags of a command line parseServeFlags has taken: each one given, under its canonical name, in the
 * order given (a repeatable flag once per time), then every other flag with its default. Aliases are left out.
 */
export function flagsInEffect(argv: readonly string[]): FlagInEffect[] {
  const given: FlagInEffect[] = [];
  for (const item of getopt([...argv], FLAGS, { abbreviations: true })) {
    if (item.option) given.push({ name: (item.option as FlagSpec).id, value: item.value ?? '', given: true });
  }
  const named = new Set(given.map((f) => f.name));
  return [...given, ...FLAGS.filter((f) => f.id === f.name && !named.has(f.name)).map((f) => ({ name: f.name, value: f.def, given: false }))];
}

export const USAGE: string = formatUsage(
  'Usage: nereid serve --model-repository <path> [flags]\n\n' +
    "Flags are tritonserver's: --flag=value or --flag value; any unambiguous prefix of a flag name works.",
  FLAGS,
);

// ---------------------------------------------------------------------------------------------------------
// The parser.

/** A refusal of getopt's in tritonserver's words. */
function refusal(p: GetoptProblem): FlagError {
  switch (p.kind) {
    case 'unknown':
      return new FlagError(p.arg.startsWith('--')
        ? `Unrecognized option '${p.spelled}'; see --help for the list of flags`
        : `Unrecognized option '${p.arg}'; flags are long, like --model-repository; see --help`);
    case 'ambiguous':
      return new FlagError(`Option '${p.spelled}' is ambiguous; possibilities: ${p.fits.map((f) => `'--${f.name}'`).join(' ')}`);
    case 'unwanted-value':
      return new FlagError(`Option '--${p.option.name}' does not take a value`);
    case 'missing-value':
      return new FlagError(`Option '--${p.option.name}' requires a value: ${(p.option as FlagSpec).arg}`);
  }
}

function apply(spec: FlagSpec, d: Draft, value: string): void {
  try {
    spec.set(d, value, spec.id);
  } catch (e) {
    if (!(e instanceof BadValue)) throw e;
    // A value that looks like a flag was most likely meant as one: getopt took it as this flag's value.
    const hint = value.startsWith('--') ? ` (--${spec.name} needs a value: write --${spec.name}=<value>)` : '';
    throw new FlagError(e.said !== undefined ? `Bad option "--${spec.name}": ${e.said}` : `Bad option "--${spec.name}": got '${value}', expected ${e.expected}${hint}`);
  }
  const effect = spec.effect;
  if (effect.kind === 'implemented' || (effect.when && !effect.when.test(value))) return;
  if (effect.kind === 'refused') throw new FlagError(`Option '--${spec.name}' is not supported: ${effect.why}`);
  if (effect.byFrontend) return;
  const flags = d.ignored.get(effect.why) ?? [];
  if (!flags.includes(spec.name)) flags.push(spec.name);
  d.ignored.set(effect.why, flags);
}

/**
 * Parses `nereid serve` arguments (without the command) into ServeOptions. Throws FlagError on the first
 * problem. `--help` stops parsing and returns at once with `help: true`, without the checks below.
 */
export function parseServeFlags(argv: string[]): ServeOptions {
  const d = newDraft();
  let positional: string | undefined;
  try {
    for (const item of getopt(argv, FLAGS, { abbreviations: true })) {
      // getopt moves non-options to the end: the first one is reported once every flag has been read.
      if (!item.option) positional ??= item.positional;
      else apply(item.option, d, item.value ?? '');
      if (d.help) return build(normalize(d));
    }
  } catch (e) {
    if (e instanceof GetoptError) throw refusal(e.problem);
    throw e;
  }
  if (positional !== undefined) throw new FlagError(`Unexpected argument: ${positional}`);
  return build(check(normalize(d)));
}

/** What tritonserver derives after parsing, before any check. */
function normalize(d: Draft): Draft {
  if (d.server.modelControlMode !== 'poll') d.server.repositoryPollSecs = 0;
  d.metrics.address ??= d.http.address;
  d.openai.address ??= d.http.address;
  if (!d.metrics.allow) {
    d.extra['allow-gpu-metrics'] = ['false'];
    d.extra['allow-cpu-metrics'] = ['false'];
  }
  for (const [why, flags] of d.ignored) {
    d.warnings.push(`${flags.map((f) => `--${f}`).join(', ')} ${flags.length > 1 ? 'have' : 'has'} no effect: ${why}`);
  }
  if (d.disableAutoComplete) {
    if (d.strictModelConfigGiven && !d.server.strictModelConfig) {
      d.warnings.push("Warning: Overriding deprecated '--strict-model-config' from False to True in favor of '--disable-auto-complete-config'!");
    }
    d.server.strictModelConfig = true;
  }
  return d;
}

function check(d: Draft): Draft {
  if (d.cacheSizeGiven && d.cacheConfigGiven) {
    throw new FlagError('Incompatible flags --response-cache-byte-size and --cache-config both provided. Please provide one or the other.');
  }
  checkLoadModels(d.server);
  checkPortCollision(d);
  if (d.exitDrainSecs > 0 && d.exitDrainSecs >= d.server.exitTimeoutSecs) {
    throw new FlagError(`--exit-drain-secs (${d.exitDrainSecs}) must be less than --exit-timeout-secs (${d.server.exitTimeoutSecs}): the drain is part of the exit timeout, which must leave time for the requests in flight`);
  }
  if (d.server.modelRepositories.length === 0) throw new FlagError('--model-repository must be specified');
  return d;
}

function checkLoadModels(s: ServerDraft): void {
  if (s.loadModels.length === 0) return;
  if (s.modelControlMode !== 'explicit') {
    throw new FlagError(`--load-model requires --model-control-mode=explicit (the mode is '${s.modelControlMode}')`);
  }
  if (s.loadModels.includes('*') && s.loadModels.length > 1) {
    throw new FlagError("--load-model=* loads every model and must be the only --load-model");
  }
}

/** tritonserver's CheckPortCollision: two enabled services on the same address string and port. Port 0 never collides. */
function checkPortCollision(d: Draft): void {
  const services: [string, string, number][] = [];
  if (d.http.allow) services.push(['HTTP', d.http.address, d.http.port]);
  if (d.grpc.allow) services.push(['GRPC', d.grpc.address, d.grpc.port]);
  if (d.metrics.allow) services.push(['metrics', d.metrics.address ?? d.http.address, d.metrics.port]);
  if (d.openai.allow) services.push(['OpenAI', d.openai.address ?? d.http.address, d.openai.port]);
  for (let i = 0; i < services.length; i++) {
    for (let j = i + 1; j < services.length; j++) {
      const [a, addr, p] = services[i]!;
      const [b, addr2, p2] = services[j]!;
      if (p !== 0 && addr === addr2 && p === p2) {
        throw new FlagError(`The server cannot listen to ${a} requests and ${b} requests at the same address and port ${addr}:${p}`);
      }
    }
  }
}

function build(d: Draft): ServeOptions {
  if (d.server.trace) {
    try {
      parseTraceConfig(d.server.trace, {});
    } catch (e) {
      const m = (e as Error).message;
      throw new FlagError(m.includes('--trace-config') ? m : `--trace-config: ${m}`);
    }
  }
  return {
    server: { ...d.server },
    http: d.http,
    exitDrainSecs: d.exitDrainSecs,
    grpc: d.grpc,
    metrics: { ...d.metrics, address: d.metrics.address ?? d.http.address },
    openai: { ...d.openai, address: d.openai.address ?? d.http.address },
    log: d.log,
    help: d.help,
    extra: d.extra,
    warnings: d.warnings,
  };
}
