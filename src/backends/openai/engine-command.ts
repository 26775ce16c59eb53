import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import { resolveModelFileOnly } from '../../config/model-files.js';
import { versionFolder, type ModelFiles } from '../backend.js';

/**
 * How to run an engine for a model: a preset's command line (or the config's own) with placeholders, the
 * engine's health path, and the environment it gets. Read from the model's config when the model loads.
 */
export interface EngineCommand {
  /** The command line as words, placeholders still in ({port}, {host}, {model_dir}, …); see commandLine(). */
  readonly words: readonly string[];
  /** Values of every placeholder but {port}, which changes when the engine moves to another port. */
  readonly values: Readonly<Record<string, string>>;
  readonly healthPath: string;
  /** The engine's whole environment: PATH and HOME, and what the config names. */
  readonly env: Readonly<Record<string, string>>;
  readonly startupTimeoutMs: number;
}

interface Preset {
  readonly command: string;
  readonly healthPath: string;
}

/**
 * The four engines Nereid knows how to start. Each listens on {host}:{port} and serves the model under
 * {model_id}, so that the gateway's requests name it; each reports its Prometheus metrics on the same port.
 */
export const PRESETS: Readonly<Record<string, Preset>> = {
  'llama-server': { command: 'llama-server --model {model_file} --host {host} --port {port} --alias {model_id} --metrics', healthPath: '/health' },
  vllm: { command: 'vllm serve {model} --host {host} --port {port} --served-model-name {model_id}', healthPath: '/health' },
  sglang: { command: 'python3 -m sglang.launch_server --model-path {model} --host {host} --port {port} --served-model-name {model_id} --enable-metrics', healthPath: '/health' },
  tgi: { command: 'text-generation-launcher --model-id {model} --hostname {host} --port {port}', healthPath: '/health' },
};

/** The placeholders a command may hold; {port} is filled each time the engine starts. */
const PLACEHOLDERS = new Set(['port', 'host', 'model_dir', 'version_dir', 'model', 'model_file', 'model_id']);

/** The engine's loopback address: an engine Nereid starts is reached through Nereid only. */
export const ENGINE_HOST = '127.0.0.1';

const DEFAULT_STARTUP_TIMEOUT_S = 600;

/**
 * The engine command of a model whose config names a preset (`engine`) or gives a command (`engine_command`);
 * undefined when it gives neither (the engine runs elsewhere, at base_url). Throws INVALID_ARG naming the
 * parameter that is wrong.
 */
export async function engineCommandOf(files: ModelFiles, config: ModelConfig, modelId: string): Promise<EngineCommand | undefined> {
  const p = (k: string): string | undefined => config.parameters?.[k]?.string_value;
  const model = files.name;
  const presetName = p('engine');
  const own = p('engine_command');
  if (presetName === undefined && own === undefined) return undefined;
  // A command is code the server runs: only the repository, never a client's load request, may give one.
  if (files.configFromRequest) throw invalidArg(`model '${model}': a config given with a load request cannot start an engine (engine, engine_command); put it in the repository's config.pbtxt`);
  if (p('base_url') !== undefined) throw invalidArg(`model '${model}': base_url and engine/engine_command exclude each other: Nereid picks the address of an engine it starts`);
  const preset = presetName === undefined ? undefined : PRESETS[presetName];
  if (presetName !== undefined && !preset) throw invalidArg(`model '${model}': unknown engine '${presetName}'; the presets are ${Object.keys(PRESETS).join(', ')}`);
  const words = splitWords(own ?? preset!.command, model);
  if (words.length === 0) throw invalidArg(`model '${model}': engine_command is empty`);
  const binary = p('engine_binary');
  if (binary !== undefined) words[0] = binary;
  words.push(...splitWords(p('engine_args') ?? '', model));
  for (const w of words) {
    for (const m of w.matchAll(/\{([a-z_]+)\}/g)) {
      if (!PLACEHOLDERS.has(m[1]!)) throw invalidArg(`model '${model}': unknown placeholder {${m[1]}} in the engine command; known: ${[...PLACEHOLDERS].map((n) => `{${n}}`).join(' ')}`);
    }
  }
  const uses = (name: string): boolean => words.some((w) => w.includes(`{${name}}`));
  const fileName = p('engine_model_file') ?? 'model.gguf';
  const modelFile = uses('model_file') ? await resolveModelFileOnly(versionFolder(files), fileName, 'parameters.engine_model_file') : '';
  if (!uses('port')) throw invalidArg(`model '${model}': the engine command must take {port}, the port Nereid picks for it`);
  const healthPath = p('engine_health_path') ?? preset?.healthPath ?? '/health';
  if (!healthPath.startsWith('/')) throw invalidArg(`model '${model}': engine_health_path must start with '/', got '${healthPath}'`);
  const secs = Number(p('engine_startup_timeout_s') ?? DEFAULT_STARTUP_TIMEOUT_S);
  if (!Number.isFinite(secs) || secs <= 0) throw invalidArg(`model '${model}': engine_startup_timeout_s must be a positive number of seconds, got '${p('engine_startup_timeout_s')}'`);
  return {
    words,
    values: { host: ENGINE_HOST, model_dir: files.modelDir, version_dir: files.versionDir, model: p('engine_model') ?? files.versionDir, model_file: modelFile, model_id: modelId },
    healthPath,
    env: environmentOf(p('engine_env'), model),
    startupTimeoutMs: secs * 1000,
  };
}

/** The command's words with every placeholder filled; {port} with `port`. */
export function commandLine(c: EngineCommand, port: number): string[] {
  const values: Record<string, string> = { ...c.values, port: String(port) };
  return c.words.map((w) => w.replace(/\{([a-z_]+)\}/g, (_, n: string) => values[n]!));
}

/**
 * A clean environment: PATH and HOME from Nereid's, then `engine_env`'s comma-separated entries, each either
 * NAME (Nereid's value, if it has one: a secret such as HF_TOKEN stays out of the config) or NAME=value.
 */
function environmentOf(spec: string | undefined, model: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'HOME']) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  for (const entry of (spec ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const eq = entry.indexOf('=');
    const name = eq < 0 ? entry : entry.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw invalidArg(`model '${model}': engine_env entries are NAME or NAME=value, got '${entry}'`);
    if (eq >= 0) env[name] = entry.slice(eq + 1);
    else if (process.env[name] !== undefined) env[name] = process.env[name]!;
  }
  return env;
}

/** Words split at spaces, with '…' and "…" keeping spaces in one word (no shell: nothing else is special). */
function splitWords(s: string, model: string): string[] {
  const words: string[] = [];
  const re = /\s*(?:"([^"]*)"|'([^']*)'|([^\s"']+))/gy;
  let word: string | undefined;
  let last = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    const glued = m[0].length > 0 && !/^\s/.test(m[0]) && word !== undefined;
    const part = m[1] ?? m[2] ?? m[3] ?? '';
    if (glued) word += part;
    else {
      if (word !== undefined) words.push(word);
      word = part;
    }
    last = re.lastIndex;
    if (m[0].length === 0) break;
  }
  if (s.slice(last).trim() !== '') throw invalidArg(`model '${model}': an unclosed quote in the engine command: ${JSON.stringify(s)}`);
  if (word !== undefined) words.push(word);
  return words;
}
