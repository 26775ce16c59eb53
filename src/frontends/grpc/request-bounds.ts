import { isNereidError, limitExceeded, type NereidError } from '../../errors.js';
import type { RequestBounds } from '../../inference/index.js';
import type { InferenceServer, ResolvedModel } from '../../server/inference-server.js';
import { parseVersion } from './infer-request.js';
import type { ModelInferRequestMsg } from './messages.js';
import { InferRequestMemo, messageFrom } from './request-memo.js';

/**
 * A ModelInferRequest's counts, read from its bytes before protobufjs decodes it. protobufjs builds one object
 * per input, output, parameter, raw_input_contents entry and shape dimension, each from as little as two bytes
 * of the wire: 2 million empty inputs (4 MB) took 3 s of the event loop, 2 million named ones (30 MB) 16 s, and
 * 15 million empty raw entries (30 MB) 39 s and gigabytes of heap. Counting the fields costs a few nanoseconds
 * each and allocates nothing, so a request holding more than its model can take is refused before anything is
 * built for it:
 *
 * - more inputs or raw_input_contents entries than the model has inputs, more requested outputs than it has
 *   outputs, a shape with more dimensions than any of its inputs (the model's counts, known at load time);
 * - typed contents with far more elements than the input's shape declares or than the model's fixed dims allow;
 * - more than MAX_PARAMETERS parameters in the request, in one input or in one output;
 * - more than MAX_TOP_LEVEL_FIELDS top-level fields of any kind, refused while counting, before the model is
 *   looked up (the model's name may come last on the wire).
 *
 * The scan reads the top level once, looks the model up, then reads the inputs and outputs, which the first
 * step has bounded; its work is linear in the bytes that arrived and stops at the first count past a bound.
 */

/** Most parameters a request, one input or one output may carry: Triton's own use a handful. */
export const MAX_PARAMETERS = 1024;
/** Most top-level fields a request may have before its model is known: far more than any model can take. */
export const MAX_TOP_LEVEL_FIELDS = 65536;

const VARINT = 0;
const I64 = 1;
const LEN = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const I32 = 5;

/**
 * Not protobuf. Thrown out of the deserializer, as protobufjs's own errors are, and answered the same way
 * (INTERNAL, "Error deserializing request"): handing the message to protobufjs instead would decode every
 * field before the broken one.
 */
const MALFORMED = new RangeError('malformed protobuf message');

/** A position in a message's bytes. Numbers past 2^32 are not needed: only tags and lengths are read. */
class Wire {
  pos = 0;
  /** The end of the message being read: the whole buffer's, or an input's or an output's while one is read. */
  end: number;
  constructor(readonly buf: Buffer) {
    this.end = buf.byteLength;
  }

  /** A varint of up to 32 significant bits (tags, lengths); longer ones are read past and come back huge. */
  varint(): number {
    const buf = this.buf;
    let pos = this.pos;
    if (pos >= this.end) throw MALFORMED;
    let b = buf[pos++]!;
    if (b < 0x80) {
      this.pos = pos;
      return b;
    }
    let value = b & 0x7f;
    let scale = 128;
    for (let i = 1; i < 10; i++) {
      if (pos >= this.end) throw MALFORMED;
      b = buf[pos++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos = pos;
        return value;
      }
      scale *= 128;
    }
    throw MALFORMED;
  }

  /** The end of the length-delimited field whose length comes next. */
  delimited(): number {
    const len = this.varint();
    const end = this.pos + len;
    if (end > this.end) throw MALFORMED;
    return end;
  }

  skip(wireType: number, field: number): void {
    switch (wireType) {
      case VARINT: this.varint(); return;
      case I64: this.advance(8); return;
      case LEN: this.pos = this.delimited(); return;
      case I32: this.advance(4); return;
      case START_GROUP: this.skipGroup(field); return;
      default: throw MALFORMED;
    }
  }

  private advance(n: number): void {
    if (this.pos + n > this.end) throw MALFORMED;
    this.pos += n;
  }

  /** A group (proto2's, never in these messages but legal as an unknown field): up to its matching end. */
  private skipGroup(field: number): void {
    for (;;) {
      const tag = this.varint();
      const wt = tag & 7;
      if (wt === END_GROUP) {
        if (tag >>> 3 !== field) throw MALFORMED;
        return;
      }
      this.skip(wt, tag >>> 3);
    }
  }

  text(start: number, end: number): string {
    return this.buf.toString('utf8', start, end);
  }
}

/** A request refused from its counts, with its id, model name and version as read (a stream answers with the id). */
export class Refusal {
  constructor(
    readonly error: NereidError,
    readonly id: string,
    readonly model_name: string,
    readonly model_version: string,
  ) {}
}

/** A message whose fields before its tensors were remembered (request-memo.ts): decoded, its tensors views of its bytes. */
export class Known {
  constructor(readonly message: ModelInferRequestMsg) {}
}

/**
 * The model the message names, looked up for the check, when the message may be decoded; else why not. With a
 * memo, a message whose fields before its tensors are remembered comes back decoded (Known). Throws when the
 * message is not protobuf.
 */
export function checkInferRequestBounds(buf: Buffer, server: InferenceServer, memo?: InferRequestMemo): ResolvedModel | Refusal | Known {
  const w = new Wire(buf);
  // Positions of the last model_name, model_version and id (proto3: the last occurrence wins).
  let name0 = 0, name1 = 0, version0 = 0, version1 = 0, id0 = 0, id1 = 0;
  let fields = 0, parameters = 0, inputs = 0, outputs = 0, raw = 0;
  // Where the first raw_input_contents entry begins, and whether only such entries follow it.
  let rawStart = -1;
  let rawAtEnd = true;
  while (w.pos < w.end) {
    const at = w.pos;
    const tag = w.varint();
    const field = tag >>> 3;
    if (++fields > MAX_TOP_LEVEL_FIELDS) {
      return refuse(w, id0, id1, name0, name1, version0, version1, limitExceeded('RESOURCE_EXHAUSTED', 'grpc-request-fields',
        `inference request has more than ${MAX_TOP_LEVEL_FIELDS} top-level fields`));
    }
    if (field === 7 && (tag & 7) === LEN) {
      if (rawStart === -1) rawStart = at;
    } else if (rawStart !== -1) {
      rawAtEnd = false;
    }
    if ((tag & 7) !== LEN || field < 1 || field > 7) {
      w.skip(tag & 7, field);
      continue;
    }
    const end = w.delimited();
    const start = w.pos;
    w.pos = end;
    switch (field) {
      case 1: name0 = start; name1 = end; break;
      case 2: version0 = start; version1 = end; break;
      case 3: id0 = start; id1 = end; break;
      case 4: parameters++; break;
      case 5: inputs++; break;
      case 6: outputs++; break;
      case 7: raw++; break;
    }
  }
  if (memo !== undefined) {
    memo.prefixEnd = rawStart === -1 ? buf.byteLength : rawStart;
    memo.rawAtEnd = rawAtEnd;
    const known = recall(memo, w, server, raw, inputs);
    if (known !== undefined) return known;
  }
  const model = w.text(name0, name1);
  if (parameters > MAX_PARAMETERS) {
    return refuse(w, id0, id1, name0, name1, version0, version1, tooManyParameters(parameters, 'the request', model));
  }
  let resolved: ResolvedModel;
  try {
    resolved = server.resolveModel(model, parseVersion(w.text(version0, version1)));
  } catch (e) {
    // A bad version string, a model that cannot take requests: refused with the words infer() would use, and
    // before the rest of the request is looked at, in the order of Triton's gRPC frontend (the version, then
    // the model, then the parameters and tensors).
    if (!isNereidError(e)) throw e;
    return refuse(w, id0, id1, name0, name1, version0, version1, e);
  }
  const limits = resolved.bounds;
  let error: NereidError | null = null;
  if (inputs > limits.inputs) error = tooManyInputs(inputs, limits, model);
  else if (raw > inputs) {
    error = limitExceeded('INVALID_ARG', 'model-inputs', `'raw_input_contents' has ${raw} entries but the request to model '${model}' has only ${inputs} inputs`);
  } else if (outputs > limits.outputs) {
    error = limitExceeded('INVALID_ARG', 'model-outputs', `expected at most ${limits.outputs} requested outputs but got ${outputs} for model '${model}'`);
  } else {
    error = checkTensors(w, limits, model);
  }
  return error === null ? resolved : refuse(w, id0, id1, name0, name1, version0, version1, error);
}

/**
 * The message decoded from remembered fields when the same bytes before its tensors were checked against the
 * bounds its model has now: only the tensors are new. Its model is looked up by the name and version remembered,
 * so nothing of those bytes is decoded. Anything else (a model that cannot take the request now, other bounds,
 * more tensors than inputs) is left to the full check, which answers it.
 */
function recall(memo: InferRequestMemo, w: Wire, server: InferenceServer, raw: number, inputs: number): Known | undefined {
  const r = memo.find(w.buf);
  if (r === undefined || raw > inputs) return undefined;
  let resolved: ResolvedModel;
  try {
    resolved = server.resolveModel(r.model, r.version);
  } catch {
    return undefined;
  }
  if (resolved.bounds !== r.bounds) return undefined;
  return new Known(messageFrom(r.fields, rawEntries(w, memo.prefixEnd, raw), resolved));
}

/** The `count` raw_input_contents entries from `start` to the message's end, as views of it. */
function rawEntries(w: Wire, start: number, count: number): Buffer[] {
  const out: Buffer[] = new Array(count);
  w.pos = start;
  for (let i = 0; i < count; i++) {
    w.varint();
    const end = w.delimited();
    out[i] = w.buf.subarray(w.pos, end);
    w.pos = end;
  }
  return out;
}

/** Second pass, over a top level now known to be small: each input's shape and parameters, each output's parameters. */
function checkTensors(w: Wire, limits: RequestBounds, model: string): NereidError | null {
  w.pos = 0;
  while (w.pos < w.end) {
    const tag = w.varint();
    const field = tag >>> 3;
    if ((tag & 7) !== LEN || (field !== 5 && field !== 6)) {
      w.skip(tag & 7, field);
      continue;
    }
    const end = w.delimited();
    const outer = w.end;
    w.end = end;
    const error = field === 5 ? checkInput(w, limits, model) : checkOutput(w, model);
    if (error !== null) return error;
    w.end = outer;
  }
  return null;
}

/** The input from w.pos to w.end; leaves w.pos at its end. */
function checkInput(w: Wire, limits: RequestBounds, model: string): NereidError | null {
  let name0 = 0, name1 = 0, dims = 0, parameters = 0;
  // The elements the shape declares, as far as it has been read (a shape after the contents bounds nothing).
  let declared = 1;
  while (w.pos < w.end) {
    const tag = w.varint();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 3 && wt === LEN) {
      // Packed dimensions: each takes 1 to 10 bytes, so a long run is refused without reading it.
      const dimsEnd = w.delimited();
      if (dimsEnd - w.pos > 10 * (limits.rank + 1)) return tooManyDims(w, name0, name1, limits, model);
      const outer = w.end;
      w.end = dimsEnd;
      while (w.pos < dimsEnd) {
        declared *= w.varint();
        dims++;
      }
      w.end = outer;
    } else if (field === 3 && wt === VARINT) {
      declared *= w.varint();
      dims++;
    } else if (field === 1 && wt === LEN) {
      name1 = w.delimited();
      name0 = w.pos;
      w.pos = name1;
    } else if (field === 5 && wt === LEN) {
      const contentsEnd = w.delimited();
      const outer = w.end;
      w.end = contentsEnd;
      const most = Math.min(slack(limits.inputElements), dims > 0 ? slack(declared) : Infinity);
      const error = checkContents(w, most, name0, name1, model);
      if (error !== null) return error;
      w.end = outer;
    } else {
      if (field === 4 && wt === LEN) parameters++;
      w.skip(wt, field);
    }
    if (dims > limits.rank) return tooManyDims(w, name0, name1, limits, model);
    if (parameters > MAX_PARAMETERS) return tooManyParameters(parameters, `input '${w.text(name0, name1)}'`, model);
  }
  return null;
}

/**
 * Room above an element count before the scan refuses: a count a little off is decoded and answered with the
 * words of the exact check that follows (Triton's), only one far past it is refused here.
 */
const slack = (n: number): number => 2 * n + 1024;

/**
 * An input's typed contents (InferTensorContents, w.pos to w.end), whose elements protobufjs would each turn
 * into an array entry or, for bytes_contents, a Buffer: no more than `most` of them, with slack over the model's
 * most for any input (when its dims are fixed) and over what the shape declares. Counting stops as soon as they
 * are too many.
 */
function checkContents(w: Wire, most: number, name0: number, name1: number, model: string): NereidError | null {
  let elements = 0;
  while (w.pos < w.end) {
    const tag = w.varint();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (wt === LEN && field >= 1 && field <= 7) {
      // A packed run: fixed-size values (fp32, fp64) by its length, varints by their last bytes.
      const end = w.delimited();
      const len = end - w.pos;
      if (field === 6) elements += len / 4;
      else if (field === 7) elements += len / 8;
      else if (len > 10 * (most - elements)) elements += Math.ceil(len / 10);
      else for (let i = w.pos; i < end; i++) if (w.buf[i]! < 0x80) elements++;
      w.pos = end;
    } else {
      elements++;
      w.skip(wt, field);
    }
    if (elements > most) {
      return limitExceeded('INVALID_ARG', 'model-input-elements',
        `unexpected number of elements in the contents of input '${w.text(name0, name1)}' for model '${model}': more than ${most}, far more than its shape and the model allow`);
    }
  }
  return null;
}

/** The requested output from w.pos to w.end; leaves w.pos at its end. */
function checkOutput(w: Wire, model: string): NereidError | null {
  let name0 = 0, name1 = 0, parameters = 0;
  while (w.pos < w.end) {
    const tag = w.varint();
    const field = tag >>> 3;
    const wt = tag & 7;
    if (field === 1 && wt === LEN) {
      name1 = w.delimited();
      name0 = w.pos;
      w.pos = name1;
      continue;
    }
    if (field === 2 && wt === LEN && ++parameters > MAX_PARAMETERS) return tooManyParameters(parameters, `output '${w.text(name0, name1)}'`, model);
    w.skip(wt, field);
  }
  return null;
}

/** Triton's words for an input count outside the model's (without the lists of names, which were not decoded). */
function tooManyInputs(got: number, l: RequestBounds, model: string): NereidError {
  const expected = l.requiredInputs === l.inputs ? `${l.inputs} inputs` : `number of inputs between ${l.requiredInputs} and ${l.inputs}`;
  return limitExceeded('INVALID_ARG', 'model-inputs', `expected ${expected} but got ${got} inputs for model '${model}'`);
}

function tooManyDims(w: Wire, name0: number, name1: number, l: RequestBounds, model: string): NereidError {
  return limitExceeded('INVALID_ARG', 'model-input-rank',
    `unexpected shape for input '${w.text(name0, name1)}' for model '${model}': more than ${l.rank} dimensions, the most any of its inputs has`);
}

function tooManyParameters(got: number, where: string, model: string): NereidError {
  return limitExceeded('RESOURCE_EXHAUSTED', 'grpc-request-parameters',
    `${where} to model '${model}' has ${got > MAX_PARAMETERS ? `more than ${MAX_PARAMETERS}` : got} parameters; at most ${MAX_PARAMETERS} are accepted`);
}

function refuse(w: Wire, id0: number, id1: number, name0: number, name1: number, v0: number, v1: number, error: NereidError): Refusal {
  return new Refusal(error, w.text(id0, id1), w.text(name0, name1), w.text(v0, v1));
}

/**
 * A deserializer for ModelInferRequest that refuses from the counts first. A refused request is not thrown
 * (any deserializer error is answered INTERNAL, which would hide the words of the refusal): it becomes an empty message carrying the refusal, which decoding the request throws.
 */
export function boundedInferDeserializer(decode: (b: Buffer) => unknown, server: InferenceServer): (b: Buffer) => ModelInferRequestMsg {
  const memo = new InferRequestMemo();
  return (b) => {
    const r = checkInferRequestBounds(b, server, memo);
    if (r instanceof Known) return r.message;
    if (!(r instanceof Refusal)) {
      const msg = decode(b) as ModelInferRequestMsg & { resolved?: ResolvedModel };
      memo.keep(b, r.bounds, msg);
      // The model rides along on the message, so that the call does not look it up again.
      msg.resolved = r;
      return msg;
    }
    return { refused: r.error, id: r.id, model_name: r.model_name, model_version: r.model_version, parameters: {}, inputs: [], outputs: [], raw_input_contents: [] };
  };
}
