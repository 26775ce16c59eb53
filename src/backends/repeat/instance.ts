import { setTimeout as sleep } from 'node:timers/promises';
import { invalidArg, toNereidError, type NereidError } from '../../errors.js';
import { formatShape, type Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, ExecutionTimes } from '../backend.js';
import { FlowSet, ResponseFlow } from '../response-flow.js';

/** One instance of a repeat model (see backend.ts). */
export class RepeatInstance implements BackendInstance {
  private readonly flows = new FlowSet();

  constructor(private readonly decoupled: boolean) {}

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    let waitMs = 0;
    const flows: ResponseFlow[] = [];
    for (const r of requests) {
      const flow = new ResponseFlow(r, this.decoupled);
      this.flows.add(flow);
      flows.push(flow);
      try {
        waitMs = this.start(r, flow);
      } catch (e) {
        flow.fail(toNereidError(e));
      }
    }
    await sleep(waitMs);
    if (!this.decoupled) await Promise.all(flows.map((f) => f.settled));
    // As Triton's backend reports it: the whole execution is compute time.
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - t0), outputNs: 0 };
  }

  /** Starts the request's responses; returns its WAIT, which the execution waits whatever else happens. */
  private start(r: BackendRequest, flow: ResponseFlow): number {
    const waitMs = uint32s(input(r, 'WAIT'))[0] ?? 0;
    const inp = input(r, 'IN');
    const delay = input(r, 'DELAY');
    // The config may say [-1] for both, so each request is checked.
    if (formatShape(inp.shape) !== formatShape(delay.shape)) {
      flow.fail(invalidArg(`expected IN and DELAY shape to match, got ${formatShape(inp.shape)} and ${formatShape(delay.shape)}`));
      return waitMs;
    }
    // Copies: the responses may outlast the request's buffers.
    void this.respond(flow, int32s(inp), uint32s(delay));
    return waitMs;
  }

  private async respond(flow: ResponseFlow, values: Int32Array, delays: Uint32Array): Promise<void> {
    for (let i = 0; i < values.length; i++) {
      if (!(await flow.wait(delays[i]!))) return;
      const outputs: Tensor[] = [];
      if (flow.wants('OUT')) outputs.push({ name: 'OUT', datatype: 'INT32', shape: [1], data: new Uint8Array(Int32Array.of(values[i]!).buffer) });
      if (flow.wants('IDX')) outputs.push({ name: 'IDX', datatype: 'UINT32', shape: [1], data: new Uint8Array(Uint32Array.of(i).buffer) });
      flow.send(outputs);
    }
    flow.end();
  }

  kill(error: NereidError): void {
    this.flows.failAll(error);
  }

  /** As Triton's instance does, waits for the responses still to come. */
  close(): Promise<void> {
    return this.flows.settled();
  }
}

function input(r: BackendRequest, name: string): Tensor {
  const t = r.inputs.find((x) => x.name === name);
  if (!t) throw invalidArg(`input '${name}' is missing from the request`);
  return t;
}

/**
 * A copy of a fixed-size tensor's elements, whatever the alignment of its bytes. (Copied with the Uint8Array
 * constructor: the data may be a Buffer, whose slice() is a view.)
 */
function int32s(t: Tensor): Int32Array {
  const bytes = new Uint8Array(t.data as Uint8Array);
  return new Int32Array(bytes.buffer, 0, bytes.byteLength >> 2);
}

function uint32s(t: Tensor): Uint32Array {
  const bytes = new Uint8Array(t.data as Uint8Array);
  return new Uint32Array(bytes.buffer, 0, bytes.byteLength >> 2);
}
