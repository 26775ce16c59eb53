import { readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { NereidError, invalidArg } from '../../errors.js';
import { modelConfigFromJson, modelConfigToJson } from '../../config/index.js';
import type { ModelConfig } from '../../config/types.js';
import { resolveModelFileOnly } from '../../config/model-files.js';
import { versionFolder, type Backend, type BackendInstance, type InstanceSpec, type ModelFiles } from '../backend.js';
import { JsInstance, WORKER_URL } from './instance.js';
import type { WorkerInit } from './model-worker.js';
import type { FromWorker } from './wire.js';

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
 * Each instance (instance_group count) is its own worker thread with its own model object. `nereid/backend-utils`
 * resolves to this server's utils module (./utils.ts) wherever the repository is.
 */
export const javascriptBackend: Backend = {
  name: 'javascript',

  async autoComplete(files: ModelFiles, config: ModelConfig): Promise<void> {
    const file = await findModelFile(files, config.default_model_filename).catch(() => undefined);
    if (!file) return; // createInstance reports the missing file
    // Starting a worker costs tens of milliseconds; a model whose source never names autoComplete has none.
    if (!(await readFile(file, 'utf8')).includes('autoComplete')) return;
    const init: WorkerInit = {
      mode: 'autocomplete', modelFile: file, modelDir: files.modelDir, modelName: files.name, decoupled: false, args: {},
      config: JSON.stringify(modelConfigToJson(config)),
    };
    const json = await runAutoComplete(init);
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
    const init: WorkerInit = {
      mode: 'instance', modelFile: file, modelDir: spec.modelDir, modelName: spec.name,
      decoupled: spec.config.model_transaction_policy?.decoupled ?? false,
      args: {
        model_config: JSON.stringify(modelConfigToJson(spec.config)),
        model_instance_kind: spec.kind.replace(/^KIND_/, ''),
        model_instance_name: spec.instanceName,
        model_instance_device_id: '0',
        model_repository: spec.modelDir,
        model_version: String(spec.version),
        model_name: spec.name,
      },
    };
    return JsInstance.create(init, spec.instanceName, spec.logger, spec.executeTimeoutMs);
  },
};

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

/** Runs the model class's static autoComplete in a short-lived worker; undefined when it has none. */
function runAutoComplete(init: WorkerInit): Promise<string | undefined> {
  return new Promise((resolvePromise, reject) => {
    const w = new Worker(WORKER_URL, { workerData: init });
    let settled = false;
    let lastError: Error | undefined;
    w.on('message', (m: FromWorker) => {
      if (m.t !== 'autocomplete') return;
      settled = true;
      if (m.error !== undefined) reject(invalidArg(`autoComplete() of model '${init.modelName}' failed: ${m.error}`));
      else resolvePromise(m.config);
      void w.terminate();
    });
    w.on('error', (e) => {
      lastError = e;
    });
    w.on('exit', (code) => {
      if (!settled) reject(new NereidError('INTERNAL', `auto-complete of model '${init.modelName}' stopped: ${lastError ? String(lastError) : `exit code ${code}`}`));
    });
  });
}
