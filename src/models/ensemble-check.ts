import { invalidArg } from '../errors.js';
import type { DataType, EnsembleStep, ModelConfig } from '../config/types.js';

/**
 * The checks of an ensemble that need its composing models' configs, as Triton's ValidateEnsembleConfig makes
 * them when the ensemble loads (core's ensemble_utils.cc; qa/L0_ensemble* load the broken ensembles and read
 * these messages): batch sizes, every step input and output mapped to something that exists, the type and shape
 * of each ensemble tensor agreeing wherever it is read or written, and no step fed by two decoupled models.
 * The checks that need only the ensemble's own config are in config/validate.ts.
 */

/** What an ensemble tensor is known to be, and by whom; also a node of the data-flow graph. */
interface TensorNode {
  readonly model: string;
  readonly type: DataType | undefined;
  readonly dims: readonly number[];
  /** dims with the batch dimension in front when the model batches. */
  readonly fullDims: readonly number[];
  decoupled: boolean;
  label: number;
  visited: boolean;
  readonly prev: TensorNode[];
  readonly next: TensorNode[];
  /** Shared by the outputs of one step, so that they all carry the same decoupled label. */
  sibling: TensorNode | undefined;
}

function node(model: string, batching: boolean, type: DataType | undefined, dims: readonly number[]): TensorNode {
  return { model, type, dims, fullDims: batching ? [-1, ...dims] : dims, decoupled: false, label: 0, visited: false, prev: [], next: [], sibling: undefined };
}

/** The composing model's loaded config for a step. */
export type StepConfig = (step: EnsembleStep) => ModelConfig;

/**
 * Throws Triton's INVALID_ARG for the first inconsistency found; returns whether the ensemble is decoupled:
 * true when a decoupled step lies on the way from its inputs to some tensor.
 */
export function checkEnsemble(config: ModelConfig, configOf: StepConfig): boolean {
  const name = config.name;
  const batching = config.max_batch_size > 0;
  const tensors = new Map<string, TensorNode>();
  for (const i of config.input) tensors.set(i.name, node(name, batching, i.data_type, i.reshape ? i.reshape.shape : i.dims));
  const sink = node(name, false, undefined, []);
  for (const o of config.output) {
    const n = node(name, batching, o.data_type, o.reshape ? o.reshape.shape : o.dims);
    tensors.set(o.name, n);
    sink.prev.push(n);
    n.next.push(sink);
  }
  for (const step of config.ensemble_scheduling!.step) {
    const c = configOf(step);
    // A composing model that does not batch is accepted whatever the ensemble's max_batch_size: the full shapes
    // decide whether its tensors fit.
    if (c.max_batch_size !== 0 && c.max_batch_size < config.max_batch_size) {
      throw invalidArg(`ensemble ${name} allows maximum batch size ${config.max_batch_size}, but it contains model ${step.model_name} which only allows maximum batch size to be ${c.max_batch_size}`);
    }
    mapStep(name, step, c, tensors);
  }
  return labelDecoupled(name, config, tensors);
}

function mapStep(ensemble: string, step: EnsembleStep, c: ModelConfig, tensors: Map<string, TensorNode>): void {
  const model = step.model_name;
  const batching = c.max_batch_size > 0;
  const where = `in ensemble ${ensemble}, `;
  for (const [input, tensor] of Object.entries(step.input_map)) {
    if (!c.input.some((i) => i.name === input)) throw invalidArg(`${where}ensemble tensor ${tensor} is mapping to non-existing input ${input} in model ${model}`);
  }
  for (const i of c.input) {
    const tensor = step.input_map[i.name];
    if (tensor === undefined) {
      if (i.optional) continue;
      throw invalidArg(`${where}input ${i.name} in model ${model} is not mapped to any ensemble tensors`);
    }
    meet(tensors, tensor, node(model, batching, i.data_type, i.dims), where);
  }
  for (const [output, tensor] of Object.entries(step.output_map)) {
    if (!c.output.some((o) => o.name === output)) throw invalidArg(`${where}ensemble tensor ${tensor} is mapped from non-existing output ${output} in model ${model}`);
  }
  const sibling = node(model, false, undefined, []);
  const decoupled = c.model_transaction_policy?.decoupled ?? false;
  for (const [output, tensor] of Object.entries(step.output_map)) {
    const o = c.output.find((x) => x.name === output)!;
    const n = meet(tensors, tensor, node(model, batching, o.data_type, o.dims), where);
    n.sibling = sibling;
    n.decoupled = decoupled;
    for (const source of Object.values(step.input_map)) {
      const p = tensors.get(source)!;
      n.prev.push(p);
      p.next.push(n);
    }
  }
}

/** The node already known for `tensor` (checked against `seen`), or `seen` as the first word on it. */
function meet(tensors: Map<string, TensorNode>, tensor: string, seen: TensorNode, where: string): TensorNode {
  const known = tensors.get(tensor);
  if (!known) {
    tensors.set(tensor, seen);
    return seen;
  }
  const prefix = `${where}ensemble tensor ${tensor}: `;
  if (known.type !== seen.type) {
    throw invalidArg(`${prefix}inconsistent data type: ${known.type} is inferred from model ${known.model} while ${seen.type} is inferred from model ${seen.model}`);
  }
  // A tensor read by a batching and a non-batching model agrees when the non-batching one names the batch
  // dimension itself.
  if (!sameDims(known.dims, seen.dims) && !sameDims(known.fullDims, seen.fullDims)) {
    throw invalidArg(`${prefix}inconsistent shape: ${dimsText(known.fullDims)} is inferred from model ${known.model} while ${dimsText(seen.fullDims)} is inferred from model ${seen.model}`);
  }
  return known;
}

function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === -1 || b[i] === -1 || d === b[i]);
}

function dimsText(dims: readonly number[]): string {
  return `[${dims.join(',')}]`;
}

/**
 * Walks the graph from the ensemble inputs; each decoupled step's outputs get a label of their own, which the
 * steps after it inherit. A step whose inputs carry two labels would pair responses of two unrelated streams.
 */
function labelDecoupled(ensemble: string, config: ModelConfig, tensors: Map<string, TensorNode>): boolean {
  let label = 0;
  const queue: TensorNode[] = [];
  for (const i of config.input) {
    const n = tensors.get(i.name)!;
    n.visited = true;
    queue.push(n);
  }
  for (let head = 0; head < queue.length; head++) {
    for (const next of queue[head]!.next) {
      if (next.visited || !next.prev.every((p) => p.visited)) continue;
      const inherited = next.prev[0]!.label;
      if (next.prev.some((p) => p.label !== inherited)) {
        throw invalidArg(`in ensemble ${ensemble}, step of model '${next.model}' receives inputs originated from different decoupled models`);
      }
      const sibling = next.sibling;
      if (sibling?.visited) next.label = sibling.label;
      else {
        next.label = next.decoupled ? ++label : inherited;
        if (sibling) {
          sibling.label = next.label;
          sibling.visited = true;
        }
      }
      next.visited = true;
      queue.push(next);
    }
  }
  return label !== 0;
}
