/**
 * The executions a Python stub holds and their open requests: which request belongs to which execution, the
 * stub's order of executions, and when an execution's input block may be freed (its execution ended and every
 * request of it answered).
 */
import { NereidError } from '../../errors.js';
import type { BackendRequest } from '../backend.js';
import type { ArenaBlock, InputArena } from './shm.js';
import type { WireRequest } from './wire.js';

/** An execution the stub holds: its input block is freed once the stub and every response are done with it. */
export interface Batch {
  readonly block: ArenaBlock | undefined;
  open: number;
  executing: boolean;
  resolve: ((inferNs: number) => void) | undefined;
  /** Gives the execution back to the scheduler unrun (all its requests were cancelled while it waited). */
  withdraw: (() => void) | undefined;
  timer: NodeJS.Timeout | undefined;
  id: number;
  /** Its requests as the stub reads them: sent again to a restarted stub when it never ran. */
  wire: readonly WireRequest[];
  /** When it was sent, and when the stub started it (the execution ahead of it ended), for its wait. */
  sentNs: bigint;
  startedNs: bigint;
}

export interface OpenRequest {
  readonly request: BackendRequest;
  readonly batch: Batch;
  readonly onAbort: (() => void) | undefined;
}

/** An execution taken out of the books to be sent again to the next stub, with its requests. */
export interface Detached {
  readonly batch: Batch;
  readonly requests: [number, OpenRequest][];
}

export class ExecutionBook {
  /** Requests sent to the stub and not answered in full, by the id the stub knows them by. */
  readonly open = new Map<number, OpenRequest>();
  readonly batches = new Map<number, Batch>();
  /** Executions sent to the stub whose 'done' has not come, in the stub's order: the first one is running. */
  readonly inStub: Batch[] = [];

  constructor(private readonly arena: InputArena, private readonly modelName: string) {}

  forget(rid: number, o: OpenRequest): void {
    this.open.delete(rid);
    if (o.onAbort) o.request.signal!.removeEventListener('abort', o.onAbort);
    o.batch.open--;
    if (!o.batch.executing && o.batch.open === 0) this.freeBatch(o.batch);
  }

  /** Frees the batch's input block once nothing can read it any more. */
  settle(id: number, batch: Batch): void {
    if (batch.executing) return;
    this.batches.delete(id);
    if (batch.open === 0) this.freeBatch(batch);
  }

  freeBatch(batch: Batch): void {
    if (batch.block) this.arena.free(batch.block);
  }

  /** A request the model may answer after its execution: one whose sender cannot wait fails now, as before. */
  answerLater(rid: number): void {
    const o = this.open.get(rid);
    if (!o) return;
    const sender = o.request.sender;
    if (sender.answerLater) return sender.answerLater();
    this.forget(rid, o);
    sender.fail(new NereidError('INTERNAL', `model '${this.modelName}' sent no response for a request`));
  }

  failUnanswered(rids: readonly number[] | undefined, error: string | undefined, cancelled = false): void {
    for (const rid of rids ?? []) {
      const o = this.open.get(rid);
      if (!o) continue;
      this.forget(rid, o);
      // A cancelled execution never ran: its requests were cancelled while they waited in the stub.
      o.request.sender.fail(cancelled ? new NereidError('CANCELLED', 'request cancelled')
        : new NereidError('INTERNAL', error ?? `model '${this.modelName}' sent no response for a request`));
    }
  }

  /** Fails every request the stub held, frees their blocks and settles the executions waiting on it. */
  failAll(error: NereidError): void {
    for (const [rid, o] of [...this.open]) {
      this.forget(rid, o);
      o.request.sender.fail(error);
    }
    for (const batch of this.batches.values()) {
      if (batch.timer) clearTimeout(batch.timer);
      batch.executing = false;
      this.freeBatch(batch);
      batch.resolve?.(0);
    }
    this.batches.clear();
    this.inStub.length = 0;
  }

  /** Takes an execution the stub never started out of the books, to send it again; its input block stays. */
  detach(batch: Batch): Detached {
    this.batches.delete(batch.id);
    const requests = [...this.open].filter(([, o]) => o.batch === batch);
    for (const [rid] of requests) this.open.delete(rid);
    return { batch, requests };
  }

  /** Puts a detached execution back in the books, for the stub it is sent to again. */
  attach(w: Detached): void {
    this.batches.set(w.batch.id, w.batch);
    for (const [rid, o] of w.requests) this.open.set(rid, o);
  }
}
