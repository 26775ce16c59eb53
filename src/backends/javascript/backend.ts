import { readFile } from 'node:fs/promises';
import { NereidError, invalidArg } from '../../errors.js';
import { modelConfigFromJson, modelConfigToJson } from '../../config/index.js';
import type { ModelConfig } from '../../config/types.js';
import { resolveModelFileOnly } from '../../config/model-files.js';
import { initializeArgs, versionFolder, type Backend, type BackendInstance, type InstanceSpec, type ModelFiles } from '../backend.js';
import { JsInstance } from './instance.js';
import { WorkerPool, maxWorkers, resolvesToOwnUtils } from './pool.js';
import type { InstanceInit } from './wire.js';

/** The config parameter that gives each instance of a model a worker thread of its own (see WorkerPool). */
export const DEDICATED_WORKER_PARAMETER = 'nereid_dedicated_worker';

/**
 * Backend "javascript": models written in JavaScript, in the shape of Triton's Python models. The version
 * folder holds `model.js` or `model.mjs` (or the config's default_model_filename), an ES module whose default
 * export (or, failing that, its export named `Model`) is the model class:
 *
 * ```js
 * import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';
 * export default class {
 *   static autoComplete(config) { return config; }   // optional, as Python's auto_complete_config
 *   initialize(args) {}                                // optional; args as Python's (model_config is JSON text)
 *   execute(requests) { return requests.map(…) }       // may be async
 *   finalize() {}                                      // optional, at unload
 * }
 * ```
 *
 * Each instance (instance_group count) has its own model object, from its own import of the model file, in one
 * of the worker threads the server's JavaScript instances share (pool.ts). `nereid/backend-utils` resolves to
 * this server's utils module (./utils.ts) wherever the repository is. One backend object per server: its pool
 * ends with the server's last JavaScript instance.
 */
export function createJavascriptBackend(): Backend {
  const pool = new WorkerPool();
  return {
    name: 'javascript',

    /** A worker (with its module hooks, when the repository needs them) starts while the configs are read. */
    prestart(modelDir: string): void {
      pool.prestart(!resolvesToOwnUtils(modelDir));
    },

    async autoComplete(files: ModelFiles, config: ModelConfig): Promise<void> {
      const file = await findModelFile(files, config.default_model_filename).catch(() => undefined);
      if (!file) return; // createInstance reports the missing file
      // Loading a model module costs milliseconds; a model whose source never names autoComplete has none.
      if (!(await readFile(file, 'utf8')).includes('autoComplete')) return;
      const init: InstanceInit = {
        mode: 'autocomplete', modelFile: file, modelDir: files.modelDir, modelName: files.name, decoupled: false, args: {},
        config: JSON.stringify(modelConfigToJson(config)),
      };
      const json = await runAutoComplete(pool, init, maxWorkers(files.backendConfig));
      if (json === undefined) return;
      let completed: ModelConfig;
      try {
        completed = modelConfigFromJson(json);
      } catch (e) {
        throw invalidArg(`autoComplete() of model '${files.name}' returned an invalid config: ${(e as Error).message}`);
      }
      Object.assign(config, completed);
    },

    async createInstance(spec: InstanceSpec): Promise<BackendInstance> {
      const file = await findModelFile(spec, spec.config.default_model_filename);
      const init: InstanceInit = {
        mode: 'instance', modelFile: file, modelDir: spec.modelDir, modelName: spec.name,
        decoupled: spec.config.model_transaction_policy?.decoupled ?? false,
        args: initializeArgs(spec),
      };
      const seat = {
        pool,
        model: `${spec.modelDir}\u0000${spec.version}`,
        dedicated: dedicatedWorker(spec.config),
        maxWorkers: maxWorkers(spec.backendConfig),
      };
      return JsInstance.create(init, seat, spec.instanceName, spec.logger, spec.executeTimeoutMs);
    },
  };
}

function dedicatedWorker(config: ModelConfig): boolean {
  const v = config.parameters[DEDICATED_WORKER_PARAMETER]?.string_value;
  if (v === undefined || v === '' || v === 'false') return false;
  if (v === 'true') return true;
  throw invalidArg(`parameter ${DEDICATED_WORKER_PARAMETER} of model '${config.name}' must be "true" or "false", got '${v}'`);
}

/** The model file: the configured name, else model.js, else model.mjs; never outside the version folder. */
async function findModelFile(files: ModelFiles, configured: string): Promise<string> {
  const folder = versionFolder(files);
  if (configured) return resolveModelFileOnly(folder, configured, 'default_model_filename');
  return resolveModelFileOnly(folder, 'model.js', 'default_model_filename')
    .catch(() => resolveModelFileOnly(folder, 'model.mjs', 'default_model_filename'))
    .catch(() => {
      throw invalidArg(`unable to find '${folder.sub}/model.js' or '${folder.sub}/model.mjs' for model '${files.name}'`);
    });
}

/** Runs the model class's static autoComplete in a worker of the pool; undefined when it has none. */
function runAutoComplete(pool: WorkerPool, init: InstanceInit, max: number): Promise<string | undefined> {
  return new Promise((resolvePromise, reject) => {
    const { worker, iid } = pool.place(`autocomplete\u0000${init.modelDir}`, false, max);
    worker.attach(iid, `autocomplete\u0000${init.modelDir}`, {
      onMessage: (m) => {
        if (m.t !== 'autocomplete') return;
        worker.leave(iid);
        if (m.error !== undefined) reject(invalidArg(`autoComplete() of model '${init.modelName}' failed: ${m.error}`));
        else resolvePromise(m.config);
      },
      onExit: (reason) => reject(new NereidError('INTERNAL', `auto-complete of model '${init.modelName}' stopped: ${reason}`)),
    }, init);
  });
}
