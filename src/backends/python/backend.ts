import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { NereidError, invalidArg } from '../../errors.js';
import { modelConfigFromJson, modelConfigToJson } from '../../config/index.js';
import type { ModelConfig } from '../../config/types.js';
import type { Logger } from '../../observability/logger.js';
import { resolveModelFileOnly } from '../../config/model-files.js';
import { initializeArgs, versionFolder, type Backend, type BackendInstance, type InstanceSpec, type ModelFiles } from '../backend.js';
import { chooseInterpreter } from './interpreter.js';
import { PythonInstance } from './instance.js';
import { StubProcess } from './stub.js';

/** Triton's defaults for the stub's shared memory (python_be.cc). */
const SHM_DEFAULT_BYTES = 1024 * 1024;
const SHM_GROWTH_BYTES = 1024 * 1024;
/**
 * Nereid's own region prefix, so its objects never collide with a Triton's on the same machine. Clients may not
 * register keys under it (sharedmemory/reserved-keys.ts).
 */
const SHM_PREFIX = 'nereid_python_';
/**
 * The Nereid config parameter for how long, in microseconds, a stub waiting for its next execution polls its pipe
 * before it sleeps (0: never polls). A request that follows its predecessor within that time finds the stub
 * awake, which saved 70-90 us of wake-ups per request on a two-core virtual machine (bench/python.mjs); the
 * price is up to that much CPU per execution when no request follows. The default covers the server's turn
 * between one request's answer and the next request of a client that sends them back to back.
 */
export const STUB_SPIN_PARAMETER = 'NEREID_STUB_SPIN_US';
const STUB_SPIN_DEFAULT_US = 200;
/** How long auto_complete_config may take. */
const AUTOCOMPLETE_TIMEOUT_MS = 60_000;

let instances = 0;

/** What a model runs: the model file, or a built-in runner module standing in for one (TorchScript). */
export interface ModelSource {
  readonly defaultFile: string;
  /** A module of python/ imported instead of the model file, given the file's path in its args. */
  readonly runner?: string;
}

/**
 * Backend "python": Triton's Python models (`model.py` with class TritonPythonModel), unchanged. Each instance
 * is a stub process (python/nereid_stub.py) with Nereid's own triton_python_backend_utils; tensors cross in
 * shared memory. `source` lets another backend (pytorch) run on the same machinery.
 */
export function pythonBackend(name: string, source: ModelSource): Backend {
  return {
    name,

    async autoComplete(files: ModelFiles, config: ModelConfig): Promise<void> {
      if (source.runner) return;
      const file = await findModelFile(files, config.default_model_filename || source.defaultFile).catch(() => undefined);
      if (!file) return; // createInstance reports the missing file
      // Starting Python costs tens of milliseconds; a model whose source never names the hook has none.
      if (!(await readFile(file, 'utf8')).includes('auto_complete_config')) return;
      const json = await runAutoComplete(files, config, file);
      if (json === undefined) return;
      let completed: ModelConfig;
      try {
        completed = modelConfigFromJson(JSON.parse(json));
      } catch (e) {
        throw invalidArg(`auto_complete_config of model '${files.name}' returned an invalid config: ${(e as Error).message}`);
      }
      Object.assign(config, completed);
    },

    async createInstance(spec: InstanceSpec): Promise<BackendInstance> {
      const file = await findModelFile(spec, spec.config.default_model_filename || source.defaultFile);
      const bc = spec.backendConfig;
      const args = initializeArgs(spec);
      return PythonInstance.create({
        interpreter: await chooseInterpreter(spec, spec.config, bc),
        init: {
          t: 'init', mode: 'instance', modelFile: file, modelDir: spec.modelDir, modelName: spec.name,
          decoupled: spec.config.model_transaction_policy?.decoupled ?? false, args, spinUs: stubSpinUs(spec.config),
          ...(source.runner ? { runner: source.runner } : {}),
        },
        instanceName: spec.instanceName,
        logger: spec.logger,
        calls: spec.calls,
        shmPrefix: regionPrefix(shmPrefixSetting(bc), String(++instances), spec.calls),
        shmDefaultBytes: byteSetting(bc, 'shm-default-byte-size', SHM_DEFAULT_BYTES, SHM_DEFAULT_BYTES, "can't be smaller than 4 MiBs"),
        shmGrowthBytes: byteSetting(bc, 'shm-growth-byte-size', SHM_GROWTH_BYTES, 1, "can't be smaller than or equal to zero."),
        executeTimeoutMs: spec.executeTimeoutMs,
        pipelineDepth: pipelineDepth(spec.config),
      });
    },
  };
}

/**
 * Where an instance's region names start: the configured prefix, the server's pid (so that a server's leftovers
 * can be told from another's), a random part (so that no client can guess a name) and the instance's number. The
 * server is told that names under the configured prefix and pid are its own, which no client may register.
 */
function regionPrefix(configured: string, instance: string, calls: InstanceSpec['calls']): string {
  calls?.reserveSharedMemory?.(`${configured}${process.pid}_`);
  return `${configured}${process.pid}_${randomBytes(6).toString('hex')}_${instance}_`;
}

/**
 * Executions one instance may hold at once (see PythonInstanceOptions.pipelineDepth): two for a model with a
 * single instance, so its stub never idles between executions; one otherwise, so that a request never waits in
 * a busy stub while another instance of the model is free.
 */
function pipelineDepth(config: ModelConfig): number {
  const instances = config.instance_group.reduce((n, g) => n + (g.count ?? 1), 0);
  return instances <= 1 ? 2 : 1;
}

export const pythonModelBackend = pythonBackend('python', { defaultFile: 'model.py' });

/**
 * A byte size of --backend-config=python: below `min`, refused in Triton's words (`tooSmall`; its words for the
 * default size name 4 MiBs though its limit, and Nereid's, is 1 MiB).
 */
function byteSetting(bc: Readonly<Record<string, string>>, key: string, dflt: number, min: number, tooSmall: string): number {
  const v = bc[key];
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw invalidArg(`--backend-config=python,${key}=${v}: must be an integer of at least ${min}`);
  if (n < min) throw invalidArg(`${key} ${tooSmall} (--backend-config=python,${key}=${v}; the least is ${min})`);
  return n;
}

/** Given, the prefix may not be empty, as Triton's backend refuses it. */
function shmPrefixSetting(bc: Readonly<Record<string, string>>): string {
  const v = bc['shm-region-prefix-name'];
  if (v === undefined) return SHM_PREFIX;
  if (v === '') throw invalidArg('shm-region-prefix-name must at least contain one character.');
  return v;
}

function stubSpinUs(config: ModelConfig): number {
  const v = config.parameters[STUB_SPIN_PARAMETER]?.string_value;
  if (v === undefined || v === '') return STUB_SPIN_DEFAULT_US;
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < 0) throw invalidArg(`parameter ${STUB_SPIN_PARAMETER} of model '${config.name}' must be a whole number of microseconds, got '${v}'`);
  return n;
}

/** The model file in the version folder; never outside it. */
function findModelFile(files: ModelFiles, file: string): Promise<string> {
  return resolveModelFileOnly(versionFolder(files), file, 'default_model_filename');
}

/** Runs TritonPythonModel.auto_complete_config in a short-lived stub; undefined when the model has none. */
async function runAutoComplete(files: ModelFiles, config: ModelConfig, file: string): Promise<string | undefined> {
  const interpreter = await chooseInterpreter(files, config, files.backendConfig);
  const logger = silentLogger();
  const prefix = regionPrefix(SHM_PREFIX, `ac${++instances}`, undefined);
  const stub = new StubProcess(interpreter, {
    t: 'init', mode: 'autocomplete', modelFile: file, modelDir: files.modelDir, modelName: files.name, decoupled: false, args: {},
    config: JSON.stringify(modelConfigToJson(config)),
    shm: { prefix, instancePrefix: prefix, defaultBytes: SHM_DEFAULT_BYTES, growthBytes: SHM_GROWTH_BYTES },
  }, `${files.name} auto-complete`, logger);
  return new Promise((resolvePromise, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      stub.kill();
      reject(new NereidError('INTERNAL', `auto_complete_config of model '${files.name}' did not return within ${AUTOCOMPLETE_TIMEOUT_MS / 1000} s`));
    }, AUTOCOMPLETE_TIMEOUT_MS);
    stub.onMessage = (m) => {
      if (m.t !== 'autocomplete' || settled) return;
      settled = true;
      clearTimeout(timer);
      if (m.error !== undefined) reject(invalidArg(`auto_complete_config of model '${files.name}' failed: ${m.error}`));
      else resolvePromise(m.config);
    };
    stub.onExit((reason) => {
      clearTimeout(timer);
      if (!settled) reject(new NereidError('INTERNAL', `auto-complete of model '${files.name}' stopped: ${reason}`));
    });
  });
}

/** Auto-complete's prints have no instance to be logged under; Logger calls there are dropped. */
function silentLogger(): Logger {
  const noop = (): void => undefined;
  const l: Logger = {
    error: noop, warn: noop, warning: noop, info: noop, verbose: noop, isVerbose: () => false, child: () => l,
    settings: () => ({ log_file: '', log_info: false, log_warning: false, log_error: false, log_verbose_level: 0, log_format: 'default' }),
    update: noop, close: () => Promise.resolve(),
  };
  return l;
}
