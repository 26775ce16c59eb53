import { join, relative } from 'node:path';
import * as ort from 'onnxruntime-node';
import { invalidArg, NereidError } from '../../errors.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../../config/types.js';
import { resolveModelFile, withoutServerPaths } from '../../config/model-files.js';
import { versionFolder, type Backend, type InstanceSpec, type ModelFiles } from '../backend.js';
import { configTypeOfOrt, nulFreeCheck } from './convert.js';
import { sessionOptions } from './session-options.js';
import { OrtInstance } from './instance.js';
import { choosePlacement } from './placement.js';
import { InlineRunner, WorkerRunner } from './runner.js';
import { openSession, type OrtSession } from './session.js';
import { checkConfigAgainstModel } from './model-io-check.js';
import { initializerBytes } from './initializer-bytes.js';

/**
 * The ONNX Runtime backend (CPU). Names and behaviour follow Triton's onnxruntime backend: `model.onnx` is a
 * file or a folder holding one, auto-complete reads the model's inputs and outputs, thread counts come from
 * config parameters.
 */
export const onnxRuntimeBackend: Backend = {
  name: 'onnxruntime',
  autoComplete,
  createInstance,
  inputCheck: nulFreeCheck,
};

/** `model.onnx` (or default_model_filename) in the version folder: a file, or a folder holding `model.onnx`. */
export async function modelPath(files: ModelFiles, config: ModelConfig): Promise<string> {
  const name = config.default_model_filename || 'model.onnx';
  const folder = versionFolder(files);
  const found = await resolveModelFile(folder, name, 'default_model_filename');
  if (!found.isDirectory) return found.path;
  const inner = await resolveModelFile(folder, join(name, 'model.onnx'), 'default_model_filename');
  if (inner.isDirectory) throw invalidArg(`unable to find '${relative(files.modelDir, inner.path)}' for model '${files.name}'`);
  return inner.path;
}

async function openModel(files: ModelFiles, config: ModelConfig): Promise<OrtSession> {
  const path = await modelPath(files, config);
  try {
    return await openSession(path, sessionOptions(config));
  } catch (e) {
    throw new NereidError('INVALID_ARG', `failed to load model '${files.name}': onnx runtime error: ${withoutServerPaths((e as Error).message, files.modelDir)}`);
  }
}

async function createInstance(spec: InstanceSpec): Promise<OrtInstance> {
  if (spec.kind === 'KIND_GPU') {
    spec.logger.warn(`model '${spec.name}' instance '${spec.instanceName}' asks for KIND_GPU; running it on CPU`);
  }
  const weights = weightsBytes(spec.config, await modelPath(spec, spec.config));
  const session = await openModel(spec, spec.config);
  try {
    checkAgainstModel(spec.config, session, spec.name);
  } catch (e) {
    await session.release();
    throw e;
  }
  const inline = new OrtInstance(new InlineRunner(session), spec.config, await weights);
  const placement = await choosePlacement(inline, spec.config);
  if (placement.choice === 'inline') {
    spec.logger.verbose(1, `model '${spec.name}' instance '${spec.instanceName}' runs on the event loop (${placement.why})`);
    return inline;
  }
  await session.release();
  spec.logger.verbose(1, `model '${spec.name}' instance '${spec.instanceName}' runs in a worker thread (${placement.why})`);
  const runner = await WorkerRunner.start(await modelPath(spec, spec.config), sessionOptions(spec.config)).catch((e: Error) => {
    throw new NereidError('INVALID_ARG', `failed to load model '${spec.name}': onnx runtime error: ${withoutServerPaths(e.message, spec.modelDir)}`);
  });
  return new OrtInstance(runner, spec.config, await weights);
}

/**
 * The model file's initializer bytes, walked once per loaded model however many instances it has: kept by the
 * model's config object, which lives as long as the loaded model, so nothing outlives it.
 */
const weightsByConfig = new WeakMap<ModelConfig, Map<string, Promise<number | undefined>>>();

function weightsBytes(config: ModelConfig, path: string): Promise<number | undefined> {
  let byPath = weightsByConfig.get(config);
  if (!byPath) weightsByConfig.set(config, (byPath = new Map()));
  let bytes = byPath.get(path);
  if (!bytes) byPath.set(path, (bytes = initializerBytes(path)));
  return bytes;
}

function checkAgainstModel(config: ModelConfig, session: OrtSession, model: string): void {
  checkConfigAgainstModel(config, session.inputMetadata, session.outputMetadata, model);
}

/** Triton's onnxruntime auto-complete (facts §3): fills max_batch_size, inputs and outputs from the model. */
async function autoComplete(files: ModelFiles, config: ModelConfig): Promise<void> {
  const hasInputs = config.input.length + config.batch_input.length > 0;
  if (hasInputs && config.output.length > 0) return;
  const session = await openModel(files, config);
  try {
    const ins = session.inputMetadata.filter(isTensor);
    const outs = session.outputMetadata.filter(isTensor);
    const capable = [...ins, ...outs].every((m) => m.shape.length >= 1 && (typeof m.shape[0] !== 'number' || m.shape[0] === -1));
    if (capable && config.max_batch_size === 0) {
      const dflt = Number(files.backendConfig['default-max-batch-size'] ?? '4');
      config.max_batch_size = dflt;
      if (dflt > 1 && !config.sequence_batching && !config.dynamic_batching) config.dynamic_batching = emptyDynamicBatching();
    } else if (!capable && config.max_batch_size !== 0) {
      throw invalidArg(`unable to autofill for '${files.name}': model does not support batching while non-zero max_batch_size is specified`);
    }
    const batched = config.max_batch_size > 0;
    if (!hasInputs) config.input = ins.map((m) => ({ ...blankInput(), name: m.name, data_type: configTypeOfOrt(m.type), ...dimsOf(m, batched) }));
    if (config.output.length === 0) config.output = outs.map((m) => ({ ...blankOutput(), name: m.name, data_type: configTypeOfOrt(m.type), ...dimsOf(m, batched) }));
  } finally {
    await session.release();
  }
}

function isTensor(m: ort.InferenceSession.ValueMetadata): m is ort.InferenceSession.TensorValueMetadata {
  return m.isTensor;
}

function dimsOf(m: ort.InferenceSession.TensorValueMetadata, batched: boolean): { dims: number[]; reshape?: { shape: number[] } } {
  const all = m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : -1));
  const dims = batched ? all.slice(1) : all;
  if (dims.length > 0) return { dims };
  return batched ? { dims: [1], reshape: { shape: [] } } : { dims: [1] };
}

function emptyDynamicBatching(): NonNullable<ModelConfig['dynamic_batching']> {
  return {
    preferred_batch_size: [], max_queue_delay_microseconds: 0, preserve_ordering: false, priority_levels: 0,
    default_priority_level: 0, priority_queue_policy: {},
  } as unknown as NonNullable<ModelConfig['dynamic_batching']>;
}

function blankInput(): ModelInput {
  return {
    name: '', data_type: 'TYPE_INVALID', format: 'FORMAT_NONE', dims: [], is_shape_tensor: false,
    allow_ragged_batch: false, optional: false, is_non_linear_format_io: false,
  } as ModelInput;
}

function blankOutput(): ModelOutput {
  return { name: '', data_type: 'TYPE_INVALID', dims: [], label_filename: '', is_shape_tensor: false, is_non_linear_format_io: false } as ModelOutput;
}
