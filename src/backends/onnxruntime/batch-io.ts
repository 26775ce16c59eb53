import type { BatchInputKind, ModelConfig } from '../../config/types.js';
import { elementCount } from '../../tensor/tensor.js';

/**
 * What Triton's onnxruntime backend does beyond plain batching, computed from the config once per instance:
 *
 * - ragged inputs (`allow_ragged_batch`) reach the model as one 1-D tensor, every request's elements one after
 *   another, so requests whose shapes differ can share a batch;
 * - batch inputs (`batch_input`) are extra model inputs the backend makes from the batch it runs, telling the
 *   model where each request's elements are (backend common's BackendInputCollector);
 * - batch outputs (`batch_output` BATCH_SCATTER_WITH_INPUT_SHAPE) are split between the requests by the shape
 *   of each one's source input rather than by rows (BackendOutputResponder::ProcessBatchOutput).
 */
export interface BatchIo {
  readonly ragged: ReadonlySet<string>;
  readonly inputs: readonly BatchInputSpec[];
  /** Output name → its source input and its full shape, -1 where the source input's dim goes. */
  readonly outputs: ReadonlyMap<string, { readonly source: string; readonly shape: readonly number[] }>;
}

export interface BatchInputSpec {
  readonly kind: BatchInputKind;
  readonly targets: readonly string[];
  readonly datatype: 'INT32' | 'FP32';
  readonly source: string;
}

export function batchIo(config: ModelConfig): BatchIo | undefined {
  const ragged = new Set(config.input.filter((i) => i.allow_ragged_batch).map((i) => i.name));
  if (ragged.size === 0 && config.batch_input.length === 0 && config.batch_output.length === 0) return undefined;
  const inputs = config.batch_input.map((b) => ({
    kind: b.kind,
    targets: b.target_name,
    datatype: b.data_type === 'TYPE_FP32' ? ('FP32' as const) : ('INT32' as const),
    source: b.source_input[0]!,
  }));
  const outputs = new Map<string, { source: string; shape: number[] }>();
  for (const b of config.batch_output) {
    for (const name of b.target_name) {
      const dims = config.output.find((o) => o.name === name)?.dims ?? [];
      outputs.set(name, { source: b.source_input[0]!, shape: config.max_batch_size > 0 ? [-1, ...dims] : [...dims] });
    }
  }
  return { ragged, inputs, outputs };
}

/**
 * A batch input's shape and little-endian data, from the shapes of its source input in each request of the
 * batch (full shapes, batch dimension first):
 *
 * | kind | shape | values |
 * | BATCH_ELEMENT_COUNT | [requests] | each request's element count |
 * | BATCH_ACCUMULATED_ELEMENT_COUNT | [requests] | running totals of those |
 * | BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO | [requests + 1] | 0, then the running totals |
 * | BATCH_MAX_ELEMENT_COUNT_AS_SHAPE | [largest element count] | none (zeros): the shape is the message |
 * | BATCH_ITEM_SHAPE | [batch rows, rank - 1] | each row's shape without the batch dim |
 * | BATCH_ITEM_SHAPE_FLATTEN | [batch rows × (rank - 1)] | the same, flat |
 */
export function batchInputTensor(kind: BatchInputKind, datatype: 'INT32' | 'FP32', shapes: readonly (readonly number[])[]): { shape: number[]; data: Uint8Array } {
  const values: number[] = [];
  let shape: number[];
  switch (kind) {
    case 'BATCH_ELEMENT_COUNT':
      for (const s of shapes) values.push(elementCount(s));
      shape = [shapes.length];
      break;
    case 'BATCH_ACCUMULATED_ELEMENT_COUNT':
    case 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO': {
      if (kind === 'BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO') values.push(0);
      let total = 0;
      for (const s of shapes) values.push((total += elementCount(s)));
      shape = [values.length];
      break;
    }
    case 'BATCH_MAX_ELEMENT_COUNT_AS_SHAPE': {
      let max = 0;
      for (const s of shapes) max = Math.max(max, elementCount(s));
      shape = [max];
      for (let i = 0; i < max; i++) values.push(0);
      break;
    }
    case 'BATCH_ITEM_SHAPE':
    case 'BATCH_ITEM_SHAPE_FLATTEN': {
      let rows = 0;
      let rank = 0;
      for (const s of shapes) {
        rows += s[0]!;
        rank = s.length - 1;
        for (let r = 0; r < s[0]!; r++) for (let d = 1; d < s.length; d++) values.push(s[d]!);
      }
      shape = kind === 'BATCH_ITEM_SHAPE' ? [rows, rank] : [rows * rank];
      break;
    }
  }
  const data = datatype === 'FP32' ? new Float32Array(values) : new Int32Array(values);
  return { shape, data: new Uint8Array(data.buffer) };
}

/** Each request's shape of a batch output: the output's shape with every -1 taken from the request's source input. */
export function scatterShape(outputShape: readonly number[], source: readonly number[]): number[] {
  return outputShape.map((d, i) => (d === -1 ? source[i] ?? 0 : d));
}
