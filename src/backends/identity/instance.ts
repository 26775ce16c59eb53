import { setTimeout as sleep } from 'node:timers/promises';
import { NereidError } from '../../errors.js';
import type { Parameters } from '../../inference/request.js';
import { byteSize } from '../../tensor/datatype.js';
import { elementCount, wireByteLength, type Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, CustomMetric, ExecutionTimes } from '../backend.js';
import type { IdentityPair } from './pairs.js';

/**
 * The parameters Triton's identity backend puts on every response, to show that responses can carry them.
 * Clients of Triton's identity models see them, so Nereid's do too.
 */
const RESPONSE_PARAMETERS: Parameters = Object.freeze({ param0: 'an example string parameter', param1: 42, param2: false });

export interface IdentitySettings {
  readonly pairs: readonly IdentityPair[];
  /** The model batches: a zero output for an absent optional input gets the batch dimension of the first input. */
  readonly batched: boolean;
  /** How long every execution waits before it copies (execute_delay_ms, scaled per instance). */
  readonly delayMs: number;
  /** input_byte_size_counter of this model version, when the server's metrics are on. */
  readonly inputBytes: CustomMetric | undefined;
}

/**
 * One instance of an identity model: each requested OUTPUT<i> is a copy of the request's INPUT<i>, with its
 * datatype and shape. Inputs are copied, not lent: they may be views of a client's shared-memory region.
 */
export class IdentityInstance implements BackendInstance {
  readonly synchronous: boolean;
  private readonly byOutput: ReadonlyMap<string, IdentityPair>;

  constructor(private readonly settings: IdentitySettings, private readonly onClose: () => void) {
    this.synchronous = settings.delayMs === 0;
    this.byOutput = new Map(settings.pairs.map((p) => [p.output, p]));
  }

  execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    if (this.settings.delayMs === 0) return Promise.resolve(this.copyAll(requests, t0));
    // Triton's backend sleeps inside the execution: the instance stays busy for the delay.
    return sleep(this.settings.delayMs).then(() => this.copyAll(requests, t0));
  }

  private copyAll(requests: readonly BackendRequest[], t0: bigint): ExecutionTimes {
    for (const r of requests) this.respond(r);
    // As Triton's backend reports it: the whole execution, delay included, is compute time.
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - t0), outputNs: 0 };
  }

  private respond(r: BackendRequest): void {
    const outputs: Tensor[] = [];
    for (const name of r.outputs) {
      const pair = this.byOutput.get(name)!;
      const input = r.inputs.find((t) => t.name === pair.input);
      if (input) {
        this.settings.inputBytes?.increment(wireByteLength(input));
        outputs.push(copyAs(name, input));
        continue;
      }
      if (!pair.absent) {
        r.sender.fail(new NereidError('UNSUPPORTED', `failed to get input '${pair.input}'`));
        return;
      }
      outputs.push(zeros(name, pair.absent, this.settings.batched ? r.inputs[0]?.shape[0] : undefined));
    }
    r.sender.send(outputs, true, RESPONSE_PARAMETERS);
  }

  close(): Promise<void> {
    this.onClose();
    return Promise.resolve();
  }
}

function copyAs(name: string, t: Tensor): Tensor {
  // The Uint8Array constructor copies; a Buffer's slice() would not.
  if (t.datatype !== 'BYTES') return { name, datatype: t.datatype, shape: t.shape, data: new Uint8Array(t.data) };
  let total = 0;
  for (const e of t.data) total += e.byteLength;
  const all = new Uint8Array(total);
  const data: Uint8Array[] = new Array(t.data.length);
  let at = 0;
  for (let i = 0; i < t.data.length; i++) {
    const e = t.data[i]!;
    all.set(e, at);
    data[i] = all.subarray(at, at + e.byteLength);
    at += e.byteLength;
  }
  return { name, datatype: 'BYTES', shape: t.shape, data };
}

/** The output of an optional input the request left out: zeros (empty strings for BYTES), as Triton's backend. */
function zeros(name: string, absent: NonNullable<IdentityPair['absent']>, batch: number | undefined): Tensor {
  const shape = batch !== undefined ? [batch, ...absent.dims] : [...absent.dims];
  const n = elementCount(shape);
  if (absent.datatype === 'BYTES') return { name, datatype: 'BYTES', shape, data: Array.from({ length: n }, () => new Uint8Array(0)) };
  return { name, datatype: absent.datatype, shape, data: new Uint8Array(n * byteSize(absent.datatype)) };
}
