/** One ModelStreamInfer stream of the perf client; requests on it are matched to responses by id. */
import type http2 from 'node:http2';
import type { Completion, SequenceStep } from './transport.js';
import { Deframer, frame, statusError } from './grpc-framing.js';
import type { MessageType } from './grpc-client.js';

interface StreamResponse {
  error_message?: string;
  infer_response?: { id?: string; outputs?: unknown[]; parameters?: Record<string, { bool_param?: boolean }> };
}

export class InferStream {
  private readonly waiting = new Map<string, Completion>();
  private readonly deframer = new Deframer();
  private seq = 0;

  /**
   * @param st a ModelStreamInfer stream just opened
   * @param decoupled whether a response without triton_final_response is final (not decoupled) or not
   * @param suffix the fragment merged into a prepared request: its id and sequence parameters
   */
  constructor(
    private readonly st: http2.ClientHttp2Stream,
    private readonly responseType: MessageType,
    private readonly decoupled: () => boolean,
    private readonly suffix: (id: string, seq: SequenceStep | undefined) => Uint8Array,
  ) {
    st.on('data', (c: Buffer) => this.deframer.push(c, (m) => this.onMessage(m)));
    st.on('trailers', (h) => this.fail(statusError(h) ?? 'stream ended'));
    st.on('error', (e) => this.fail(e.message));
    st.on('close', () => this.fail('stream closed'));
  }

  /** Writes a request: the prepared message and, merged into it, the fragment with this request's id. */
  send(message: Buffer, seq: SequenceStep | undefined, c: Completion): void {
    const id = `${++this.seq}`;
    this.waiting.set(id, c);
    this.st.write(frame(Buffer.concat([message, this.suffix(id, seq)])));
  }

  close(): void {
    this.st.end();
  }

  private fail(why: string): void {
    for (const c of this.waiting.values()) c.done(why);
    this.waiting.clear();
  }

  private onMessage(m: Buffer): void {
    const r = this.responseType.decode(m) as unknown as StreamResponse;
    const id = r.infer_response?.id ?? '';
    const c = this.waiting.get(id) ?? (this.waiting.size === 1 ? this.waiting.values().next().value : undefined);
    if (!c) return;
    const key = this.waiting.has(id) ? id : this.waiting.keys().next().value!;
    if (r.error_message) {
      this.waiting.delete(key);
      c.done(r.error_message);
      return;
    }
    const finalParam = r.infer_response?.parameters?.triton_final_response;
    const isFinal = finalParam === undefined ? !this.decoupled() : finalParam.bool_param === true;
    const empty = finalParam !== undefined && isFinal && (r.infer_response?.outputs?.length ?? 0) === 0;
    if (!empty) c.response();
    if (isFinal) {
      this.waiting.delete(key);
      c.done(null);
    }
  }
}
