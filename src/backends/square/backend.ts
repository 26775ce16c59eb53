import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';
import type { Logger } from '../../observability/logger.js';
import { formatShape } from '../../tensor/tensor.js';
import type { Backend, InstanceSpec } from '../backend.js';
import { SquareInstance, type SquareSettings } from './instance.js';

/**
 * Backend "square": Triton's square_backend, a decoupled model of its QA (square_int32). Input IN and output
 * OUT, both INT32 [1]; a request whose IN is n gets n responses, each with OUT = n, then the final flag alone
 * (none but the flag for 0). Batching is allowed, each request being a batch of one.
 *
 * Parameters, as Triton's backend reads them (a value that is not all digits is ignored):
 * CUSTOM_INFER_DELAY_NS before each response, CUSTOM_OUTPUT_DELAY_NS after its output is made;
 * CUSTOM_FAIL_COUNT and CUSTOM_EMPTY_COUNT: of the n responses the last EMPTY are not sent and the FAIL before
 * them fail.
 */
export const squareBackend: Backend = {
  name: 'square',
  createInstance(spec: InstanceSpec): Promise<SquareInstance> {
    checkConfig(spec.config);
    return Promise.resolve(new SquareInstance(settings(spec.config, spec.logger), spec.config.model_transaction_policy?.decoupled ?? false));
  },
};

/** Triton's square backend's checks at load, in its order and words. */
function checkConfig(config: ModelConfig): void {
  if (config.input.length !== 1) throw invalidArg(`expected 1 input, got ${config.input.length}`);
  if (config.output.length !== 1) throw invalidArg(`expected 1 output, got ${config.output.length}`);
  const inp = config.input[0]!;
  const out = config.output[0]!;
  if (inp.name !== 'IN') throw invalidArg(`expected first input tensor name to be IN, got ${inp.name}`);
  if (out.name !== 'OUT') throw invalidArg(`expected first output tensor name to be OUT, got ${out.name}`);
  for (const [t, name] of [[inp, 'IN'], [out, 'OUT']] as const) {
    if (t.dims.length !== 1 || t.dims[0] !== 1) throw invalidArg(`expected ${name} shape to be [1], got ${formatShape(t.dims)}`);
  }
  for (const [t, name] of [[inp, 'IN'], [out, 'OUT']] as const) {
    if (t.data_type !== 'TYPE_INT32') throw invalidArg(`expected ${name} datatype to be INT32, got ${t.data_type}`);
  }
}

function settings(config: ModelConfig, logger: Logger): SquareSettings {
  const read = (key: string): number => {
    const text = config.parameters[key]?.string_value;
    if (text === undefined) return 0;
    if (!/^\d+$/.test(text)) {
      logger.info(`${text} string_value from ${key} parameter is not a number`);
      return 0;
    }
    return Number(text);
  };
  return {
    inferDelayNs: read('CUSTOM_INFER_DELAY_NS'),
    outputDelayNs: read('CUSTOM_OUTPUT_DELAY_NS'),
    failCount: read('CUSTOM_FAIL_COUNT'),
    emptyCount: read('CUSTOM_EMPTY_COUNT'),
  };
}
