/**
 * Streamed text, sent one loop turn late. node-llama-cpp calls back with each token's text and then queues
 * the next evaluation, which it dispatches from a setImmediate. Sending a response at once puts the whole
 * way out (the server's stream, the frontend's encoding, the socket write) between one token and the next
 * evaluation; sending it from a setImmediate queued inside another runs it after that dispatch, while the
 * llama.cpp thread evaluates the next token. Pieces that arrive before a send go out together.
 */
export class DeferredText {
  private pending = '';
  private scheduled = false;

  constructor(private readonly send: (text: string) => void) {}

  push(piece: string): void {
    if (piece === '') return;
    this.pending += piece;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => setImmediate(this.flushScheduled));
  }

  /** Sends what is pending now (before the final response). */
  flush(): void {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.send(text);
  }

  /** Drops what is pending (the request was cancelled). */
  discard(): void {
    this.pending = '';
  }

  private readonly flushScheduled = (): void => {
    this.scheduled = false;
    this.flush();
  };
}
