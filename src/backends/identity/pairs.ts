import { invalidArg } from '../../errors.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../../config/types.js';
import { fromConfigType, type DataType } from '../../tensor/datatype.js';
import { formatShape } from '../../tensor/tensor.js';

/** An output of an identity model and the input it copies (OUTPUT<i> ← INPUT<i>). */
export interface IdentityPair {
  readonly output: string;
  readonly input: string;
  /** For an optional input a request left out: the zeros the output then holds (batch dimension not included). */
  readonly absent: { readonly datatype: DataType; readonly dims: readonly number[] } | undefined;
}

/**
 * The pairs of an identity model, checked as Triton's identity backend checks its config at load, with its
 * messages: as many inputs as outputs, named INPUT<i> and OUTPUT<i>, each output with an input of the same
 * index, datatype and shape (the reshape's when there is one).
 */
export function identityPairs(config: ModelConfig): IdentityPair[] {
  if (config.input.length !== config.output.length) throw invalidArg('model configuration must have equal input/output pairs');
  const inputs = new Map<string, ModelInput>();
  const outputs = new Map<string, ModelOutput>();
  for (let i = 0; i < config.input.length; i++) {
    const input = config.input[i]!;
    const output = config.output[i]!;
    if (!input.name.startsWith('INPUT')) throw invalidArg(`expected input name to follow INPUT<index> pattern, got '${input.name}'`);
    if (!output.name.startsWith('OUTPUT')) throw invalidArg(`expected output name to follow OUTPUT<index> pattern, got '${output.name}'`);
    inputs.set(input.name.slice('INPUT'.length), input);
    outputs.set(output.name.slice('OUTPUT'.length), output);
  }
  const pairs: IdentityPair[] = [];
  // Triton walks the outputs by index in sorted order, so the first mismatch it reports is that of the lowest.
  for (const index of [...outputs.keys()].sort()) {
    const output = outputs.get(index)!;
    const input = inputs.get(index);
    if (!input) throw invalidArg('expected input and output indices to match');
    if (input.data_type !== output.data_type) {
      throw invalidArg(`expected input and output datatype to match, got ${input.data_type} and ${output.data_type}`);
    }
    const inShape = input.reshape?.shape ?? input.dims;
    const outShape = output.reshape?.shape ?? output.dims;
    if (formatShape(inShape) !== formatShape(outShape)) {
      throw invalidArg(`expected input and output shape to match, got ${formatShape(inShape)} and ${formatShape(outShape)}`);
    }
    const datatype = fromConfigType(input.data_type);
    if (!datatype) throw invalidArg(`input '${input.name}' has data type ${input.data_type}, which the identity backend does not support`);
    pairs.push({
      output: output.name,
      input: input.name,
      absent: input.optional ? { datatype, dims: inShape.map((d) => (d === -1 ? 1 : d)) } : undefined,
    });
  }
  return pairs;
}
