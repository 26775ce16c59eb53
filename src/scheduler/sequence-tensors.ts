/**
 * The tensors a sequence batcher adds to a sequence's requests: the control inputs (START, END, READY,
 * CORRID) and the implicit state's value at the start of a sequence.
 */
import { invalidArg } from '../errors.js';
import type { SequenceControl, SequenceState } from '../config/types.js';
import { byteSize, fromConfigType, type DataType } from '../tensor/datatype.js';
import { elementCount, type Tensor } from '../tensor/tensor.js';
import { deserializeBytes } from '../tensor/bytes.js';
import type { Job } from './scheduler.js';

/** A control input, decided at load: its name, its kind and values, and its data type. */
export interface ControlPlan {
  readonly name: string;
  readonly datatype: DataType;
  readonly control: SequenceControl;
}

/** The control inputs of a sequence_batching config, one plan each. */
export function controlPlans(inputs: ReadonlyArray<{ readonly name: string; readonly control: readonly SequenceControl[] }>): ControlPlan[] {
  return inputs.map((c) => {
    const control = c.control[0]!;
    return { name: c.name, control, datatype: controlDataType(control) };
  });
}

function controlDataType(c: SequenceControl): DataType {
  if (c.kind === 'CONTROL_SEQUENCE_CORRID') return fromConfigType(c.data_type) ?? 'UINT64';
  if (c.fp32_false_true.length > 0) return 'FP32';
  if (c.bool_false_true.length > 0) return 'BOOL';
  return 'INT32';
}

/** One request's value of a control input: shape [1] (or [1, 1] with the batch dimension). */
export function controlTensor(c: ControlPlan, job: Job, id: number | bigint | string, batched: boolean): Tensor {
  const shape = batched ? [1, 1] : [1];
  if (c.control.kind === 'CONTROL_SEQUENCE_CORRID') {
    if (c.datatype === 'BYTES') return { name: c.name, datatype: 'BYTES', shape, data: [new TextEncoder().encode(String(id))] };
    return { name: c.name, datatype: c.datatype, shape, data: scalarBytes(c.datatype, id) } as Tensor;
  }
  const on = c.control.kind === 'CONTROL_SEQUENCE_START' ? job.sequenceStart : c.control.kind === 'CONTROL_SEQUENCE_END' ? job.sequenceEnd : true;
  const pair: readonly (number | boolean)[] = c.datatype === 'FP32' ? c.control.fp32_false_true : c.datatype === 'BOOL' ? c.control.bool_false_true : c.control.int32_false_true;
  return { name: c.name, datatype: c.datatype, shape, data: scalarBytes(c.datatype, pair[on ? 1 : 0]!) } as Tensor;
}

function scalarBytes(dt: DataType, v: number | bigint | string | boolean): Uint8Array {
  const b = new Uint8Array(byteSize(dt as Exclude<DataType, 'BYTES'>));
  const view = new DataView(b.buffer);
  switch (dt) {
    case 'BOOL': view.setUint8(0, v ? 1 : 0); break;
    case 'INT32': view.setInt32(0, Number(v), true); break;
    case 'UINT32': view.setUint32(0, Number(v), true); break;
    case 'INT64': view.setBigInt64(0, BigInt(v as number), true); break;
    case 'UINT64': view.setBigUint64(0, BigInt(v as number), true); break;
    case 'FP32': view.setFloat32(0, Number(v), true); break;
    default: throw invalidArg(`sequence control of type ${dt} is not supported`);
  }
  return b;
}

/**
 * A state's value at the start of a sequence: zeros, or initial_state's zero_data or data_file. A BYTES state
 * starts as empty strings (Triton zeroes each element's 4-byte length); its data_file holds serialized
 * elements (a 4-byte little-endian length before each).
 */
export function initialState(st: SequenceState, batched: boolean, initialData: ReadonlyMap<string, Uint8Array>): Tensor {
  const dt = fromConfigType(st.data_type);
  if (!dt) throw invalidArg(`state '${st.input_name}' has unsupported data type ${st.data_type}`);
  const init = st.initial_state[0];
  const dims = (init && init.dims.length > 0 ? init.dims : st.dims).map((d) => (d < 0 ? 1 : d));
  const shape = batched ? [1, ...dims] : dims;
  const file = init?.data_file ? initialData.get(init.data_file) : undefined;
  if (init?.data_file && !file) throw invalidArg(`initial state file '${init.data_file}' of state '${st.input_name}' was not read`);
  if (dt === 'BYTES') return { name: st.output_name, datatype: dt, shape, data: initialStrings(st, elementCount(shape), file) };
  const size = elementCount(shape) * byteSize(dt);
  let data = new Uint8Array(size);
  if (file) {
    if (file.byteLength !== size) throw invalidArg(`initial state file '${init!.data_file}' holds ${file.byteLength} bytes; state '${st.input_name}' needs ${size}`);
    data = new Uint8Array(file);
  }
  return { name: st.output_name, datatype: dt, shape, data } as Tensor;
}

/** The elements of a BYTES state's initial value: the data file's, or empty strings. */
function initialStrings(st: SequenceState, count: number, file: Uint8Array | undefined): Uint8Array[] {
  if (!file) return Array.from({ length: count }, () => new Uint8Array(0));
  try {
    return deserializeBytes(new Uint8Array(file), count, st.input_name);
  } catch (e) {
    throw invalidArg(`initial state file '${st.initial_state[0]!.data_file}' of state '${st.input_name}': ${(e as Error).message}`);
  }
}
