/**
 * How tensors cross between the server and a JavaScript model's worker thread. All tensors of one message are
 * copied, each with one bulk copy, into a single fresh ArrayBuffer that is then transferred (moved, not
 * cloned). Cloning a view instead would copy its whole underlying buffer (a request body, a pooled Buffer)
 * once per tensor, and transferring the caller's own buffers would detach memory the caller still holds.
 *
 * Each tensor starts at a multiple of 8 bytes, so the receiver can view it as any typed array in place.
 * BYTES tensors travel in the binary tensor extension's layout: per element a 4-byte little-endian length and
 * the bytes; the receiver splits them into views without copying.
 *
 * This module is shared by both sides of the thread boundary and imports nothing.
 */

/** One tensor of a packed message: where its bytes are in the message's buffer. */
export interface WireTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly offset: number;
  readonly byteLength: number;
  /** BYTES only: the number of elements. */
  readonly count?: number;
}

/** A tensor on its way in: fixed-size data as raw bytes, BYTES as one Uint8Array per element. */
export interface PlainTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  readonly data: Uint8Array | readonly Uint8Array[];
}

const align8 = (n: number): number => (n + 7) & ~7;

function wireLength(t: PlainTensor): number {
  if (t.data instanceof Uint8Array) return t.data.byteLength;
  let n = 0;
  for (const e of t.data) n += 4 + e.byteLength;
  return n;
}

/**
 * Packs groups of tensors (one group per request or response) into one buffer. Returns the buffer and, per
 * group, where each tensor landed.
 */
export function pack(groups: readonly (readonly PlainTensor[])[]): { buffer: ArrayBuffer; groups: WireTensor[][] } {
  let total = 0;
  for (const g of groups) for (const t of g) total = align8(total) + wireLength(t);
  const buffer = new ArrayBuffer(align8(total));
  const bytes = new Uint8Array(buffer);
  const view = new DataView(buffer);
  let at = 0;
  const out = groups.map((g) =>
    g.map((t): WireTensor => {
      at = align8(at);
      const offset = at;
      if (t.data instanceof Uint8Array) {
        bytes.set(t.data, at);
        at += t.data.byteLength;
        return { name: t.name, datatype: t.datatype, shape: t.shape, offset, byteLength: t.data.byteLength };
      }
      for (const e of t.data) {
        view.setUint32(at, e.byteLength, true);
        bytes.set(e, at + 4);
        at += 4 + e.byteLength;
      }
      return { name: t.name, datatype: t.datatype, shape: t.shape, offset, byteLength: at - offset, count: t.data.length };
    }),
  );
  return { buffer, groups: out };
}

/** The bytes of a fixed-size tensor, as a view over the message's buffer. */
export function fixedBytes(buffer: ArrayBuffer, w: WireTensor): Uint8Array {
  return new Uint8Array(buffer, w.offset, w.byteLength);
}

/** The elements of a BYTES tensor, as views over the message's buffer. */
export function bytesElements(buffer: ArrayBuffer, w: WireTensor): Uint8Array[] {
  const view = new DataView(buffer, w.offset, w.byteLength);
  const out: Uint8Array[] = new Array(w.count ?? 0);
  let at = 0;
  for (let i = 0; i < out.length; i++) {
    const len = view.getUint32(at, true);
    out[i] = new Uint8Array(buffer, w.offset + at + 4, len);
    at += 4 + len;
  }
  return out;
}

// ---- messages ----

/** One request of an execution, as the worker receives it. */
export interface WireRequest {
  readonly rid: number;
  readonly id: string;
  readonly inputs: readonly WireTensor[];
  readonly outputs: readonly string[];
  readonly parameters: Readonly<Record<string, string | number | boolean | bigint>> | undefined;
  readonly correlationId: number | bigint | string;
  readonly flags: number;
  readonly timeoutUs: number;
}

/**
 * Messages to a worker. One worker hosts several instances (of one or more models); `iid` names the instance,
 * `rid` a request of that instance.
 */
export type ToWorker =
  /** Register the module hooks now, ahead of a model that will need them. */
  | { readonly t: 'hooks' }
  | { readonly t: 'load'; readonly iid: number; readonly init: InstanceInit }
  | { readonly t: 'exec'; readonly iid: number; readonly batch: number; readonly buffer: ArrayBuffer; readonly requests: readonly WireRequest[] }
  | { readonly t: 'cancel'; readonly iid: number; readonly rid: number }
  | { readonly t: 'finalize'; readonly iid: number }
  /** Forget the instance without calling into it (it was killed). */
  | { readonly t: 'drop'; readonly iid: number };

/** What a worker needs to load one instance, or (mode 'autocomplete') to run a model class's autoComplete. */
export interface InstanceInit {
  readonly mode: 'instance' | 'autocomplete';
  readonly modelFile: string;
  readonly modelDir: string;
  readonly modelName: string;
  readonly decoupled: boolean;
  /** initialize()'s argument: Triton's keys, string values. */
  readonly args: Readonly<Record<string, string>>;
  /** autocomplete: the config in its JSON form. */
  readonly config?: string;
}

/** Triton's error codes (TRITONSERVER_Error_Code), as the model's TritonError carries them. */
export const ERROR_CODE_NAMES = ['UNKNOWN', 'INTERNAL', 'NOT_FOUND', 'INVALID_ARG', 'UNAVAILABLE', 'UNSUPPORTED', 'ALREADY_EXISTS', 'CANCELLED'] as const;

/** Messages from a worker, each about the instance `iid`. */
export type FromWorker =
  | { readonly t: 'ready'; readonly iid: number }
  | { readonly t: 'init-error'; readonly iid: number; readonly message: string }
  | {
      readonly t: 'resp';
      readonly iid: number;
      readonly rid: number;
      readonly final: boolean;
      /** Absent: a FINAL flag sent without a response. */
      readonly outputs?: readonly WireTensor[];
      readonly buffer?: ArrayBuffer;
      readonly parameters?: Record<string, string | number | boolean | bigint>;
      readonly error?: { readonly code: number; readonly message: string };
    }
  | { readonly t: 'done'; readonly iid: number; readonly batch: number; readonly inferNs: number; readonly error?: string; readonly unanswered?: readonly number[] }
  | { readonly t: 'log'; readonly iid: number; readonly level: number; readonly message: string }
  | { readonly t: 'finalized'; readonly iid: number; readonly error?: string }
  | { readonly t: 'autocomplete'; readonly iid: number; readonly config?: string; readonly error?: string };
