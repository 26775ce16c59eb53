import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import { formatShape } from '../../tensor/tensor.js';
import type { Backend, InstanceSpec } from '../backend.js';
import { RepeatInstance } from './instance.js';

/**
 * Backend "repeat": Triton's repeat_backend, the decoupled model of its QA (repeat_int32). Inputs IN (INT32,
 * one dimension), DELAY (UINT32, IN's shape) and WAIT (UINT32 [1]); outputs OUT (INT32 [1]) and IDX (UINT32 [1]).
 * For n elements in IN a request gets n responses, the i'th DELAY[i] ms after the one before with OUT = IN[i]
 * and IDX = i, then the final flag alone. The execution ends after WAIT ms, so with WAIT below the sum of
 * DELAY one instance works on several requests at once and their responses interleave.
 */
export const repeatBackend: Backend = {
  name: 'repeat',
  createInstance(spec: InstanceSpec): Promise<RepeatInstance> {
    checkConfig(spec.config);
    return Promise.resolve(new RepeatInstance(spec.config.model_transaction_policy?.decoupled ?? false));
  },
};

/** Triton's repeat backend's checks at load, in its order and words (it relies on the tensors' order too). */
function checkConfig(config: ModelConfig): void {
  if (config.max_batch_size !== 0) throw invalidArg('repeat backend only supports models with max_batch_size == 0');
  if (config.input.length !== 3) throw invalidArg(`expected 3 inputs, got ${config.input.length}`);
  if (config.output.length !== 2) throw invalidArg(`expected 2 outputs, got ${config.output.length}`);
  const [inp, delay, wait] = config.input as [ModelConfig['input'][0], ModelConfig['input'][0], ModelConfig['input'][0]];
  const [out, idx] = config.output as [ModelConfig['output'][0], ModelConfig['output'][0]];
  const names: [string, string, string][] = [
    [inp.name, 'IN', 'first input'], [delay.name, 'DELAY', 'second input'], [wait.name, 'WAIT', 'third input'],
    [out.name, 'OUT', 'first output'], [idx.name, 'IDX', 'second output'],
  ];
  for (const [got, want, which] of names) {
    if (got !== want) throw invalidArg(`expected ${which} tensor name to be ${want}, got ${got}`);
  }
  if (inp.dims.length !== 1) throw invalidArg(`expected IN shape to have one dimension, got ${formatShape(inp.dims)}`);
  if (formatShape(inp.dims) !== formatShape(delay.dims)) {
    throw invalidArg(`expected IN and DELAY shape to match, got ${formatShape(inp.dims)} and ${formatShape(delay.dims)}`);
  }
  for (const [t, name] of [[wait, 'WAIT'], [out, 'OUT'], [idx, 'IDX']] as const) {
    if (t.dims.length !== 1 || t.dims[0] !== 1) throw invalidArg(`expected ${name} shape to be [1], got ${formatShape(t.dims)}`);
  }
  const types: [string, string, string][] = [
    [inp.data_type, 'INT32', 'IN'], [delay.data_type, 'UINT32', 'DELAY'], [wait.data_type, 'UINT32', 'WAIT'],
    [out.data_type, 'INT32', 'OUT'], [idx.data_type, 'UINT32', 'IDX'],
  ];
  for (const [got, want, name] of types) {
    if (got !== `TYPE_${want}`) throw invalidArg(`expected ${name} datatype to be ${want}, got ${got}`);
  }
}
