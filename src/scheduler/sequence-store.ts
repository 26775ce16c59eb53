import { createHash } from 'node:crypto';
import { packTensors, unpackTensors } from '../tensor/pack.js';
import type { Tensor } from '../tensor/tensor.js';
import type { Job } from './scheduler.js';

/**
 * A sequence as it is kept outside the process (--sequence-state-store), so that any replica can run its next
 * step: how many steps were applied, whether END was among them, the implicit state the last step left, and
 * that step's request id, input digest and reply, so a retry of it is answered without being applied again.
 */
export interface StoredSequence {
  /** Steps applied so far; the compare-and-set of a commit is on this number. */
  readonly step: number;
  readonly ended: boolean;
  readonly state: readonly Tensor[];
  /** The last step's request id ('' when it had none: such a step cannot be recognised on retry). */
  readonly lastId: string;
  readonly lastDigest: string;
  readonly reply: readonly Tensor[];
}

/**
 * Where sequences live between steps. `commit` writes `next` only when the stored step is still `expected`
 * (0: no record) and answers false when another request advanced the sequence first: two replicas never both
 * apply a step. A record expires `ttlMs` (the model's max_sequence_idle_microseconds) after the latest step
 * that loaded or committed it. A store that cannot answer well inside `ttlMs` rejects, so that the step can be
 * sent again while its sequence is alive.
 */
export interface SequenceStateStore {
  load(key: string, ttlMs: number): Promise<StoredSequence | undefined>;
  commit(key: string, expected: number, next: StoredSequence, ttlMs: number): Promise<boolean>;
  close(): Promise<void>;
}

interface Meta { ended: boolean; id: string; digest: string; stateBytes: number }

export function encodeSequence(s: StoredSequence): Buffer {
  const state = packTensors(s.state);
  const meta: Meta = { ended: s.ended, id: s.lastId, digest: s.lastDigest, stateBytes: state.byteLength };
  const head = Buffer.from(JSON.stringify(meta));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.byteLength);
  return Buffer.concat([len, head, state, packTensors(s.reply)]);
}

export function decodeSequence(step: number, b: Buffer): StoredSequence {
  const n = b.readUInt32LE(0);
  const meta = JSON.parse(b.toString('utf8', 4, 4 + n)) as Meta;
  const at = 4 + n;
  return {
    step, ended: meta.ended, lastId: meta.id, lastDigest: meta.digest,
    state: unpackTensors(b.subarray(at, at + meta.stateBytes)),
    reply: unpackTensors(b.subarray(at + meta.stateBytes)),
  };
}

/**
 * What makes a retry the same step: its flags, inputs and requested outputs. A client that reuses one request
 * id for different steps is then not answered with an old reply.
 */
export function stepDigest(job: Job): string {
  const h = createHash('sha1');
  h.update(`${job.sequenceStart ? 1 : 0}${job.sequenceEnd ? 1 : 0}|${job.outputs.join(',')}|`);
  for (const t of job.inputs) {
    h.update(`${t.name}:${t.datatype}:${t.shape.join('x')}|`);
    if (t.datatype === 'BYTES') for (const e of t.data) h.update(e);
    else h.update(t.data);
  }
  return h.digest('base64');
}
