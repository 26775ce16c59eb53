import type { ModelConfig } from '../../config/types.js';
import { NereidError } from '../../errors.js';
import { byteSize, fromConfigType } from '../../tensor/datatype.js';
import { controlType } from './instance.js';
import { elementCount, type Tensor } from '../../tensor/tensor.js';
import type { BackendInstance } from '../backend.js';

/**
 * Inline or worker thread (see runner.ts)? The parameter `nereid_execution_placement` decides when set
 * ("inline" or "worker"). Otherwise Nereid times a few runs on a small made-up input: a model that answers
 * under a millisecond (its fastest probe run) runs inline, anything slower (or that the probe cannot run) in a worker thread.
 */
export const PLACEMENT_PARAMETER = 'nereid_execution_placement';
const INLINE_BELOW_NS = 1_000_000;
const PROBE_RUNS = 5;

export async function choosePlacement(instance: BackendInstance, config: ModelConfig): Promise<{ choice: 'inline' | 'worker'; why: string }> {
  const asked = config.parameters[PLACEMENT_PARAMETER]?.string_value;
  if (asked === 'inline' || asked === 'worker') return { choice: asked, why: `parameter ${PLACEMENT_PARAMETER}` };
  if (asked !== undefined && asked !== 'auto') {
    throw new NereidError('INVALID_ARG', `parameter ${PLACEMENT_PARAMETER} must be "inline", "worker" or "auto", got "${asked}"`);
  }
  const inputs = probeInputs(config);
  if (!inputs) return { choice: 'worker', why: 'no probe input could be made' };
  const times: number[] = [];
  for (let i = 0; i < PROBE_RUNS; i++) {
    let failed = false;
    const sender = { send: () => undefined, fail: () => { failed = true; } };
    const t0 = process.hrtime.bigint();
    await instance.execute([{ inputs, outputs: config.output.map((o) => o.name), parameters: undefined, sender }]);
    if (failed) return { choice: 'worker', why: 'the probe run failed' };
    times.push(Number(process.hrtime.bigint() - t0));
  }
  // The fastest run is the model's own cost; slower ones measure whatever else the machine was doing (other
  // models loading, a busy neighbour), which must not push a microsecond model into a worker.
  const fastest = Math.min(...times);
  const why = `fastest probe run ${(fastest / 1000).toFixed(0)} µs`;
  return fastest < INLINE_BELOW_NS ? { choice: 'inline', why } : { choice: 'worker', why };
}

/** One batch item of zeros ("0" for strings), variable dims as 1; undefined for configs with no inputs. */
function probeInputs(config: ModelConfig): Tensor[] | undefined {
  if (config.input.length === 0) return undefined;
  const batched = config.max_batch_size > 0;
  const zero = new TextEncoder().encode('0');
  const out: Tensor[] = [];
  // A sequence model also takes its control and implicit-state inputs.
  const seq = config.sequence_batching;
  const extra = [
    ...(seq?.control_input ?? []).map((c) => ({ name: c.name, data_type: controlType(c.control[0]), dims: [1] as number[], reshape: undefined })),
    ...(seq?.state ?? []).map((st) => ({ name: st.input_name, data_type: st.data_type, dims: st.dims, reshape: undefined })),
  ];
  for (const i of [...config.input, ...extra]) {
    const datatype = fromConfigType(i.data_type);
    if (!datatype) return undefined;
    const dims = (i.reshape ? i.reshape.shape : i.dims).map((d) => (d === -1 ? 1 : d));
    const shape = batched ? [1, ...dims] : dims;
    const n = elementCount(shape);
    out.push(datatype === 'BYTES'
      ? { name: i.name, datatype, shape, data: Array.from({ length: n }, () => zero) }
      : { name: i.name, datatype, shape, data: new Uint8Array(n * byteSize(datatype)) });
  }
  return out;
}
