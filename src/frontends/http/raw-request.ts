import { invalidArg } from '../../errors.js';
import type { ResolvedModel } from '../../server/inference-server.js';
import { byteSize } from '../../tensor/datatype.js';
import type { Tensor } from '../../tensor/tensor.js';

/**
 * A raw binary request (Inference-Header-Content-Length: 0): the whole body is the data of the model's one
 * input, its name, datatype and shape taken from the model as Triton's core deduces them. A batching model gets
 * a batch of one; one variable dimension takes what the bytes fill (whether they fill it exactly is the
 * model's ordinary size check); a BYTES input must be a single element, the body being that element.
 */
export function rawInput(model: string, resolved: ResolvedModel, body: Buffer): Tensor {
  if (resolved.inputs.size !== 1) {
    throw invalidArg(`Raw request must only have 1 input (found 1) to be deduced but got ${resolved.inputs.size} inputs in '${model}' model configuration`);
  }
  const info = resolved.inputs.values().next().value!;
  const batched = resolved.maxBatchSize > 0;
  const shape = [...info.shape];
  if (batched) shape[0] = 1;
  let dynamic = -1;
  let count = 1;
  for (let i = batched ? 1 : 0; i < shape.length; i++) {
    if (shape[i] !== -1) {
      count *= shape[i]!;
      continue;
    }
    if (dynamic !== -1) {
      throw invalidArg(`The shape of the raw input '${info.name}' can not be deduced because there are more than one variable-sized dimension`);
    }
    dynamic = i;
  }
  if (info.datatype === 'BYTES') {
    if (dynamic !== -1 || count !== 1) throw invalidArg(`For BYTE datatype raw input '${info.name}', the model must have input shape [1]`);
    return { name: info.name, datatype: 'BYTES', shape, data: [body] };
  }
  if (dynamic !== -1) shape[dynamic] = count === 0 ? 0 : Math.floor(body.byteLength / count / byteSize(info.datatype));
  return { name: info.name, datatype: info.datatype, shape, data: body };
}
