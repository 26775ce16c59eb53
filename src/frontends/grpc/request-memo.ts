import type { RequestBounds } from '../../inference/index.js';
import type { ResolvedModel } from '../../server/inference-server.js';
import { BytesMemo, deepFreeze } from '../bytes-memo.js';
import { parseVersion } from './infer-request.js';
import type { ModelInferRequestMsg } from './messages.js';

/**
 * ModelInferRequests decoded lately, by the bytes before their tensors. Clients encode the fields in their
 * numbers' order, so raw_input_contents (field 7) comes last, and a client sending tensors of the same shapes
 * sends the same bytes before them every time: the model, inputs, outputs and parameters. Those bytes are
 * compared with the ones remembered before they are checked and decoded again; only the tensors, views of the
 * message, are read anew. A message is remembered when its inputs carry no typed contents (their data would
 * make every prefix different), up to MEMO_PREFIX_BYTES, MEMO_ENTRIES of them per server, with the model's
 * name and version as the message named them and the bounds they were checked against: the model is found
 * from those bytes, so an entry is looked up by its bytes alone, and the bounds the model has now are compared
 * after (the bounds check, request-bounds.ts). What the remembered fields hold is frozen, as every request
 * decoded from them shares it. Messages that never repeat (an id per request) make the memo rest
 * (bytes-memo.ts).
 *
 * The bounds check (request-bounds.ts) reads where the message's tensors begin; `prefixEnd` and `rawAtEnd`
 * are what its last scan found.
 */
export const MEMO_PREFIX_BYTES = 1024;
export const MEMO_ENTRIES = 4;

const NO_RAW: readonly Buffer[] = Object.freeze([]);

/** Fields remembered, with the model they name and the bounds they were checked against. */
export interface RememberedFields {
  readonly fields: ModelInferRequestMsg;
  readonly model: string;
  readonly version: number | undefined;
  readonly bounds: RequestBounds;
}

export class InferRequestMemo {
  private readonly memo = new BytesMemo<RememberedFields>(MEMO_PREFIX_BYTES, MEMO_ENTRIES);
  /** Where the last message scanned has its first raw_input_contents (its end when it has none). */
  prefixEnd = 0;
  /** Whether nothing but raw_input_contents follows them in that message. */
  rawAtEnd = false;

  /** The fields before the tensors of `buf`, the message last scanned, if remembered. */
  find(buf: Buffer): RememberedFields | undefined {
    return this.rawAtEnd ? this.memo.find(buf, 0, this.prefixEnd, this) : undefined;
  }

  /**
   * Remembers `msg`, decoded from `buf` (the message last scanned, checked for `bounds`), when it may be. Called
   * before the model is put on the message (`resolved`): everything the message holds is frozen, and the model
   * must not be.
   */
  keep(buf: Buffer, bounds: RequestBounds, msg: ModelInferRequestMsg): void {
    // Nothing is copied or frozen for a message the memo does not want (too long, or while it rests).
    if (!this.rawAtEnd || !this.memo.wants(this.prefixEnd) || msg.inputs.some((t) => t.contents !== null)) return;
    // The message's own prototype keeps protobufjs's defaults (fields the client did not send) readable. What
    // the fields hold is frozen; the object itself is not, so that each request's message, made from it, can
    // have its own raw_input_contents and model (a frozen prototype's property cannot be shadowed by assignment).
    const fields: ModelInferRequestMsg = Object.assign(Object.create(Object.getPrototypeOf(msg) as object) as ModelInferRequestMsg, msg, { raw_input_contents: NO_RAW });
    for (const v of Object.values(fields)) deepFreeze(v);
    // Every entry is this memo's: the bounds are compared once the model is found (see above).
    this.memo.keep(buf, 0, this.prefixEnd, this, { fields, model: msg.model_name, version: parseVersion(msg.model_version), bounds });
  }
}

/** A request's message from remembered fields: the tensors its own bytes hold after them (views), its model. */
export function messageFrom(fields: ModelInferRequestMsg, raw: Buffer[], resolved: ResolvedModel): ModelInferRequestMsg {
  const m = Object.create(fields) as { raw_input_contents: Buffer[]; resolved: ResolvedModel };
  m.raw_input_contents = raw;
  m.resolved = resolved;
  return m as unknown as ModelInferRequestMsg;
}
