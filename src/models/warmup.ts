import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { NereidError, invalidArg } from '../errors.js';
import type { ModelConfig } from '../config/types.js';
import type { BackendInstance } from '../backends/backend.js';
import { byteSize, fromConfigType } from '../tensor/datatype.js';
import { deserializeBytes } from '../tensor/bytes.js';
import { elementCount, type Tensor } from '../tensor/tensor.js';
import { resolveModelFileOnly } from '../config/model-files.js';

/**
 * Triton's model warmup: every `model_warmup` entry runs `count` times (once when 0) on each instance before
 * the model turns READY. A failure fails the load, as in Triton.
 */
export async function warmUp(instance: BackendInstance, config: ModelConfig, folder: WarmupFolder, instanceName: string): Promise<void> {
  for (const w of config.model_warmup) {
    const batch = Math.max(w.batch_size, 1);
    const inputs: Tensor[] = [];
    for (const [name, spec] of Object.entries(w.inputs)) {
      inputs.push(await warmupInput(name, spec, config.max_batch_size > 0 ? batch : 0, folder));
    }
    const outputs = config.output.map((o) => o.name);
    for (let i = 0; i < Math.max(w.count, 1); i++) {
      let error: NereidError | undefined;
      const sender = { send: () => undefined, fail: (e: NereidError) => { error = e; } };
      await instance.execute([{ inputs, outputs, parameters: undefined, sender }]);
      if (error) throw new NereidError('INVALID_ARG', `failed to warm up instance '${instanceName}' with sample '${w.name}': ${error.message}`);
    }
  }
}

/** The model whose warmup samples are read: its data files live in `<model folder>/warmup`, as in Triton. */
export interface WarmupFolder {
  readonly model: string;
  readonly modelDir: string;
}

interface WarmupInputSpec {
  data_type: string;
  dims: number[];
  zero_data?: boolean;
  random_data?: boolean;
  input_data_file?: string;
}

async function warmupInput(name: string, spec: WarmupInputSpec, batch: number, folder: WarmupFolder): Promise<Tensor> {
  const datatype = fromConfigType(spec.data_type);
  if (!datatype) throw invalidArg(`warmup input '${name}' has unsupported data type ${spec.data_type}`);
  const itemShape = spec.dims;
  const shape = batch > 0 ? [batch, ...itemShape] : itemShape;
  const perItem = elementCount(itemShape);
  const rows = Math.max(batch, 1);
  if (spec.input_data_file) {
    const file = await resolveModelFileOnly({ ...folder, sub: 'warmup' }, spec.input_data_file, `input_data_file of warmup input '${name}'`);
    const one = await readFile(file);
    if (datatype === 'BYTES') {
      const els = deserializeBytes(one, perItem, name);
      return { name, datatype, shape, data: Array.from({ length: rows }, () => els).flat() };
    }
    const need = perItem * byteSize(datatype);
    if (one.byteLength < need) throw invalidArg(`warmup data file '${spec.input_data_file}' holds ${one.byteLength} bytes; input '${name}' needs ${need}`);
    return { name, datatype, shape, data: repeat(one.subarray(0, need), rows) };
  }
  if (datatype === 'BYTES') {
    const el = spec.random_data ? new TextEncoder().encode('random') : new Uint8Array(0);
    return { name, datatype, shape, data: Array.from({ length: perItem * rows }, () => el) };
  }
  const bytes = perItem * rows * byteSize(datatype);
  const data = new Uint8Array(bytes);
  if (spec.random_data) fillRandom(datatype, data);
  return { name, datatype, shape, data };
}

/** Integers get random bits; booleans 0/1; floats uniform in [0, 1) so no NaN or infinity reaches the model. */
function fillRandom(datatype: string, data: Uint8Array): void {
  if (datatype === 'FP32' || datatype === 'FP64') {
    const a = datatype === 'FP32' ? new Float32Array(data.buffer) : new Float64Array(data.buffer);
    for (let i = 0; i < a.length; i++) a[i] = Math.random();
  } else if (datatype !== 'FP16' && datatype !== 'BF16') {
    data.set(randomBytes(data.byteLength));
    if (datatype === 'BOOL') for (let i = 0; i < data.length; i++) data[i]! &= 1;
  }
}

function repeat(one: Uint8Array, n: number): Uint8Array {
  const out = new Uint8Array(one.byteLength * n);
  for (let i = 0; i < n; i++) out.set(one, i * one.byteLength);
  return out;
}
