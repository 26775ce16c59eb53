import { setImmediate as nextTurn } from 'node:timers/promises';
import { invalidArg, NereidError, toNereidError } from '../../errors.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { BackendInstance, BackendRequest, ExecutionTimes } from '../backend.js';
import { FlowSet, ResponseFlow } from '../response-flow.js';

export interface SquareSettings {
  readonly inferDelayNs: number;
  readonly outputDelayNs: number;
  readonly failCount: number;
  readonly emptyCount: number;
}

/** Responses sent back to back before the loop lets other work in, when no delay paces them. */
const RESPONSES_PER_TURN = 64;

/** One instance of a square model (see backend.ts). */
export class SquareInstance implements BackendInstance {
  private readonly flows = new FlowSet();

  constructor(private readonly settings: SquareSettings, private readonly decoupled: boolean) {}

  async execute(requests: readonly BackendRequest[]): Promise<ExecutionTimes> {
    const t0 = process.hrtime.bigint();
    const flows: ResponseFlow[] = [];
    for (const r of requests) {
      const flow = new ResponseFlow(r, this.decoupled);
      this.flows.add(flow);
      flows.push(flow);
      try {
        const { n, rank } = count(r);
        void this.respond(flow, n, new Array<number>(rank).fill(1));
      } catch (e) {
        flow.fail(toNereidError(e));
      }
    }
    // Triton's backend lets its requests go at once and answers from threads of its own.
    if (!this.decoupled) await Promise.all(flows.map((f) => f.settled));
    return { inputNs: 0, inferNs: Number(process.hrtime.bigint() - t0), outputNs: 0 };
  }

  /** `shape`: all ones, of the request's rank (with or without a batch dimension), as Triton's backend answers. */
  private async respond(flow: ResponseFlow, n: number, shape: readonly number[]): Promise<void> {
    const { inferDelayNs, outputDelayNs, failCount, emptyCount } = this.settings;
    const out = new Uint8Array(Int32Array.of(n).buffer);
    for (let e = 0; e < n; e++) {
      if (inferDelayNs > 0 ? !(await flow.wait(inferDelayNs / 1e6)) : flow.stopped) return;
      if (e + emptyCount >= n) continue; // an empty result: nothing is sent
      const outputs: Tensor[] = flow.wants('OUT') ? [{ name: 'OUT', datatype: 'INT32', shape, data: out }] : [];
      if (outputDelayNs > 0 && !(await flow.wait(outputDelayNs / 1e6))) return;
      if (e + failCount + emptyCount >= n) {
        // Triton sends the failure as one response of the stream; a Nereid request ends with its first error.
        flow.fail(new NereidError('UNKNOWN', 'simulated failure'));
        return;
      }
      flow.send(outputs);
      if (inferDelayNs === 0 && outputDelayNs === 0 && (e + 1) % RESPONSES_PER_TURN === 0) await nextTurn();
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

/** The number of responses a request asks for: its IN, which must be a batch of one. */
function count(r: BackendRequest): { n: number; rank: number } {
  const t = r.inputs.find((x) => x.name === 'IN');
  if (!t || t.datatype === 'BYTES') throw invalidArg("input 'IN' is missing from the request");
  if (t.shape.length === 2 && t.shape[0] !== 1) throw invalidArg('unexpected shape for IN input');
  const n = new DataView(t.data.buffer, t.data.byteOffset, t.data.byteLength).getInt32(0, true);
  // Triton's backend takes a negative IN as an unsigned count of about 2^64 responses.
  if (n < 0) throw invalidArg(`expected IN to be a non-negative number of responses, got ${n}`);
  return { n, rank: t.shape.length };
}
