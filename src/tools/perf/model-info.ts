/**
 * What the load generator needs to know of a model, from KServe v2 metadata and, where the server has Triton's
 * model configuration extension, its config (batching, decoupled, sequence batching).
 */
import { isDataType, fromConfigType, type DataType } from '../../tensor/index.js';

export interface InputInfo {
  readonly name: string;
  readonly datatype: DataType;
  /** Dimensions without the batch dimension; -1 for variable ones. */
  readonly dims: readonly number[];
  readonly optional: boolean;
}

export interface ModelInfo {
  readonly name: string;
  readonly version: string;
  readonly inputs: readonly InputInfo[];
  readonly outputs: readonly string[];
  /** 0 when the model does not batch. */
  readonly maxBatchSize: number;
  readonly decoupled: boolean;
  readonly sequence: boolean;
  /** The config as the server gave it (JSON form), when the server has the extension. */
  readonly config: Record<string, unknown> | undefined;
}

interface MetaTensor { name: string; datatype: string; shape: number[] }

export function modelInfoFrom(meta: Record<string, unknown>, config: Record<string, unknown> | undefined, version: string): ModelInfo {
  const metaInputs = (meta.inputs as MetaTensor[] | undefined) ?? [];
  const metaOutputs = (meta.outputs as MetaTensor[] | undefined) ?? [];
  // Without a config, a leading -1 on every input is taken for the batch dimension, as KServe v2 metadata shows it.
  const leadingBatch = metaInputs.length > 0 && metaInputs.every((t) => t.shape[0] === -1);
  const maxBatchSize = config ? Number(config.max_batch_size ?? 0) : leadingBatch ? 2 ** 31 - 1 : 0;
  const cfgInputs = (config?.input as Record<string, unknown>[] | undefined) ?? [];
  const inputs: InputInfo[] = metaInputs.map((t) => {
    const c = cfgInputs.find((x) => x.name === t.name);
    const datatype = isDataType(t.datatype) ? t.datatype : c ? fromConfigType(String(c.data_type)) : undefined;
    if (!datatype) throw new Error(`input '${t.name}' has datatype '${t.datatype}', which the load generator does not know`);
    const dims = c?.dims ? (c.dims as unknown[]).map(Number) : maxBatchSize > 0 ? t.shape.slice(1) : t.shape;
    return { name: t.name, datatype, dims, optional: c?.optional === true };
  });
  const policy = config?.model_transaction_policy as { decoupled?: boolean } | undefined;
  return {
    name: String(meta.name ?? ''),
    version,
    inputs,
    outputs: metaOutputs.map((o) => o.name),
    maxBatchSize,
    decoupled: policy?.decoupled === true,
    sequence: config?.sequence_batching !== undefined,
    config,
  };
}
