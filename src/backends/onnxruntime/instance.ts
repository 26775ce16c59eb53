import type * as ort from 'onnxruntime-node';
import { isNereidError, NereidError } from '../../errors.js';
import type { ModelConfig, SequenceControl } from '../../config/types.js';
import { byteSize, fromConfigType, type DataType } from '../../tensor/datatype.js';
import { concatBatch, concatFlat, GrowingScratch, splitBatch } from '../../tensor/batch.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, ExecutionTimes, InstanceMemory } from '../backend.js';
import { fromOrt, ortType, toOrt } from './convert.js';
import type { Runner } from './runner.js';
import type { OrtFeeds, OrtResults } from './session.js';
import { batchInputTensor, batchIo, scatterShape, type BatchIo } from './batch-io.js';

interface IoInfo {
  readonly name: string;
  readonly datatype: DataType;
  readonly ortType: ort.Tensor.Type;
  /** Inputs: where batches are concatenated, reused from one execution to the next. */
  readonly scratch: GrowingScratch;
}

/**
 * One ONNX Runtime session, inline or in a worker thread (runner.ts). Everything a request needs from the
 * config is looked up once here, at load.
 */
export class OrtInstance implements BackendInstance {
  private readonly inputs: readonly IoInfo[];
  private readonly inputByName: ReadonlyMap<string, IoInfo>;
  private readonly outputs: ReadonlyMap<string, IoInfo>;
  private readonly allOutputNames: readonly string[];
  /** Ragged inputs, batch inputs and batch outputs; undefined for the (usual) config that has none. */
  private readonly batchIo: BatchIo | undefined;

  readonly synchronous: boolean;
  /** The model's weights (initializer-bytes.ts): each instance has a session of its own, so each holds them all. */
  readonly memory: (() => InstanceMemory) | undefined;

  constructor(readonly runner: Runner, config: ModelConfig, weightsBytes?: number) {
    this.synchronous = runner.synchronous;
    if (weightsBytes !== undefined) {
      const memory: InstanceMemory = Object.freeze({ bytes: weightsBytes, external: false });
      this.memory = () => memory;
    } else {
      this.memory = undefined;
    }
    // The sequence batcher feeds control and implicit-state inputs and reads state outputs besides the
    // config's own inputs and outputs.
    const seq = config.sequence_batching;
    const controls = (seq?.control_input ?? []).map((c) => ({ name: c.name, data_type: controlType(c.control[0]) }));
    const stateIn = (seq?.state ?? []).map((st) => ({ name: st.input_name, data_type: st.data_type }));
    const stateOut = (seq?.state ?? []).map((st) => ({ name: st.output_name, data_type: st.data_type }));
    this.inputs = [...config.input, ...controls, ...stateIn].map(ioInfo);
    this.inputByName = new Map(this.inputs.map((io) => [io.name, io]));
    const outputs = [...config.output, ...stateOut];
    this.outputs = new Map(outputs.map((o) => [o.name, ioInfo(o)]));
    this.allOutputNames = outputs.map((o) => o.name);
    this.batchIo = batchIo(config);
    this.executeNow = runner.synchronous ? (requests) => this.runNow(requests) : undefined;
  }

  readonly executeNow: ((requests: readonly BackendRequest[]) => ExecutionTimes) | undefined;

  execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    if (this.executeNow) return Promise.resolve(this.executeNow(requests));
    return this.executeAsync(requests);
  }

  /** A run on the calling thread: the inline runner's session answers synchronously. */
  private runNow(requests: readonly BackendRequest[]): ExecutionTimes {
    const t0 = process.hrtime.bigint();
    let results: OrtResults;
    let t1 = t0;
    try {
      const feeds = this.feeds(requests);
      t1 = process.hrtime.bigint();
      results = this.runner.run(feeds, this.fetches(requests)) as OrtResults;
    } catch (e) {
      return this.failed(requests, e, t0, t1);
    }
    return this.answered(requests, results, t0, t1);
  }

  private async executeAsync(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    let results: OrtResults;
    let t1 = t0;
    try {
      const feeds = this.feeds(requests);
      t1 = process.hrtime.bigint();
      results = await this.runner.run(feeds, this.fetches(requests));
    } catch (e) {
      return this.failed(requests, e, t0, t1);
    }
    return this.answered(requests, results, t0, t1);
  }

  /** Sends each request its outputs; the times of the three stages, the run ending now. */
  private answered(requests: readonly BackendRequest[], results: OrtResults, t0: bigint, t1: bigint): ExecutionTimes {
    const t2 = process.hrtime.bigint();
    this.respond(requests, results);
    const t3 = process.hrtime.bigint();
    return { inputNs: Number(t1 - t0), inferNs: Number(t2 - t1), outputNs: Number(t3 - t2) };
  }

  private fetches(requests: readonly BackendRequest[]): readonly string[] {
    return requests.length === 1 ? requests[0]!.outputs : this.allOutputNames;
  }

  private failed(requests: readonly BackendRequest[], e: unknown, t0: bigint, t1: bigint): ExecutionTimes {
    const err = isNereidError(e) ? e : new NereidError('INTERNAL', `onnx runtime error: ${(e as Error).message}`);
    for (const r of requests) r.sender.fail(err);
    const t = process.hrtime.bigint();
    return { inputNs: Number(t1 - t0), inferNs: Number(t - t1), outputNs: 0 };
  }

  private feeds(requests: readonly BackendRequest[]): OrtFeeds {
    const feeds: OrtFeeds = {};
    if (requests.length === 1 && !this.batchIo) {
      // One request, the usual case: its tensors go as they are, with no batch to assemble.
      for (const t of requests[0]!.inputs) {
        const io = this.inputByName.get(t.name);
        if (io) feeds[t.name] = toOrt(t, io.ortType, t.shape);
      }
      return feeds;
    }
    for (const io of this.inputs) {
      const parts: Tensor[] = [];
      for (const r of requests) {
        const t = inputNamed(r.inputs, io.name);
        if (t) parts.push(t);
      }
      if (parts.length === 0) continue; // an optional input nobody sent
      // The inline runner is done with its inputs when run() returns and the worker runner copies them when it
      // posts them, so the instance's next execution may write over this one's batch.
      const t = this.batchIo?.ragged.has(io.name) ? concatFlat(parts) : concatBatch(parts, io.scratch);
      feeds[io.name] = toOrt(t, io.ortType, t.shape);
    }
    if (this.batchIo) {
      for (const bi of this.batchIo.inputs) {
        const { shape, data } = batchInputTensor(bi.kind, bi.datatype, requests.map((r) => sourceShape(r, bi.source)));
        for (const target of bi.targets) {
          feeds[target] = toOrt({ name: target, datatype: bi.datatype, shape, data }, bi.datatype === 'FP32' ? 'float32' : 'int32', shape);
        }
      }
    }
    return feeds;
  }

  private respond(requests: readonly BackendRequest[], results: OrtResults): void {
    if (this.batchIo && this.batchIo.outputs.size > 0) return this.respondScattered(requests, results);
    if (requests.length === 1) {
      const r = requests[0]!;
      r.sender.send(r.outputs.map((name) => fromOrt(name, this.outputs.get(name)!.datatype, results[name]!)), true);
      return;
    }
    const rows = requests.map((r) => r.inputs[0]?.shape[0] ?? 1);
    const split = new Map<string, Tensor[]>();
    for (const name of this.allOutputNames) {
      split.set(name, splitBatch(fromOrt(name, this.outputs.get(name)!.datatype, results[name]!), rows));
    }
    requests.forEach((r, i) => r.sender.send(r.outputs.map((name) => split.get(name)![i]!), true));
  }

  /** Outputs split by rows, except batch outputs, which are split by the shapes of their source inputs. */
  private respondScattered(requests: readonly BackendRequest[], results: OrtResults): void {
    const scattered = this.batchIo!.outputs;
    const rows = requests.map((r) => r.inputs[0]?.shape[0] ?? 1);
    const split = new Map<string, Tensor[]>();
    for (const name of requests.length === 1 ? requests[0]!.outputs : this.allOutputNames) {
      const whole = fromOrt(name, this.outputs.get(name)!.datatype, results[name]!);
      const batchOutput = scattered.get(name);
      if (!batchOutput) {
        split.set(name, splitBatch(whole, rows));
        continue;
      }
      const pieces: Tensor[] = [];
      let at = 0;
      for (const r of requests) {
        const shape = scatterShape(batchOutput.shape, sourceShape(r, batchOutput.source));
        const n = shape.reduce((a, b) => a * b, 1);
        if (whole.datatype === 'BYTES') {
          pieces.push({ name, datatype: 'BYTES', shape, data: whole.data.slice(at, at + n) });
        } else {
          const size = byteSize(whole.datatype);
          pieces.push({ name, datatype: whole.datatype, shape, data: whole.data.subarray(at * size, (at + n) * size) });
        }
        at += n;
      }
      split.set(name, pieces);
    }
    requests.forEach((r, i) => r.sender.send(r.outputs.map((name) => split.get(name)![i]!), true));
  }

  close(): Promise<void> {
    return this.runner.close();
  }
}

/** The full shape of a request's input, for batch inputs and outputs (an error when the request lacks it). */
function sourceShape(r: BackendRequest, name: string): readonly number[] {
  for (const t of r.inputs) if (t.name === name) return t.shape;
  throw new NereidError('INVALID_ARG', `batch input or output source '${name}' is missing from the request`);
}

function ioInfo(io: { name: string; data_type: string }): IoInfo {
  const datatype = fromConfigType(io.data_type);
  const t = datatype && ortType(datatype);
  if (!datatype || !t) throw new NereidError('INVALID_ARG', `tensor '${io.name}' has data type ${io.data_type}, which the onnxruntime backend does not support`);
  return { name: io.name, datatype, ortType: t, scratch: new GrowingScratch() };
}

function inputNamed(inputs: readonly Tensor[], name: string): Tensor | undefined {
  for (const t of inputs) if (t.name === name) return t;
  return undefined;
}

/** The data type a sequence control input carries, from which of its value lists is set. */
export function controlType(c: SequenceControl | undefined): string {
  if (!c) return 'TYPE_INVALID';
  if (c.kind === 'CONTROL_SEQUENCE_CORRID') return c.data_type;
  if (c.fp32_false_true.length > 0) return 'TYPE_FP32';
  if (c.bool_false_true.length > 0) return 'TYPE_BOOL';
  return 'TYPE_INT32';
}
