import type { NereidError } from '../errors.js';
import type { ExecutionTimes } from '../backends/backend.js';
import type { Parameters, ResponseSender } from '../inference/index.js';
import type { Tensor } from '../tensor/tensor.js';
import { RingQueue } from './queue.js';
import type { Job } from './scheduler.js';

/**
 * preserve_ordering for one instance's executions whose answers may come after the execution has ended (a
 * Python model answering through its response sender from another thread): each request's answer is held
 * until every request dispatched before it has been answered, then given to the client in dispatch order.
 * For models that are not decoupled: one final answer per request.
 */
export class AnswerOrder {
  private readonly slots = new RingQueue<OrderedAnswer>();

  /** `released(n)`: n requests were answered (the scheduler counts them out of its running requests). */
  constructor(private readonly released: (n: number) => void) {}

  /** A place in the order for `job`, in dispatch order; the backend answers through the place's sender. */
  reserve(job: Job): OrderedAnswer {
    const slot = new OrderedAnswer(job, this);
    this.slots.push(slot);
    return slot;
  }

  /** Answers the requests at the head of the order that are ready, in order. */
  flush(): void {
    let n = 0;
    for (let s = this.slots.peek(); s?.ready(); s = this.slots.peek()) {
      this.slots.shift();
      s.deliver();
      n++;
    }
    if (n > 0) this.released(n);
  }
}

/** One request's place in an AnswerOrder: what the backend answered, and when its execution ended. */
export class OrderedAnswer implements ResponseSender {
  private answer: { outputs: readonly Tensor[]; parameters: Parameters | undefined } | NereidError | undefined;
  private late = false;
  private ended: { startNs: bigint; times: ExecutionTimes } | undefined;

  constructor(private readonly job: Job, private readonly order: AnswerOrder) {}

  send(outputs: readonly Tensor[], final: boolean, parameters?: Parameters): void {
    if (!final) return; // not decoupled: only the final response is an answer
    this.answer = { outputs, parameters };
    if (this.ended) this.order.flush();
  }

  fail(error: NereidError): void {
    this.answer = error;
    if (this.ended) this.order.flush();
  }

  answerLater(): void {
    this.late = true;
  }

  /** The execution ended: the answer is complete unless the backend said it would come later. */
  end(startNs: bigint, times: ExecutionTimes): void {
    this.ended = { startNs, times };
    this.order.flush();
  }

  ready(): boolean {
    return this.ended !== undefined && (this.answer !== undefined || !this.late);
  }

  deliver(): void {
    const a = this.answer;
    if (a !== undefined) {
      if ('outputs' in a) this.job.sender.send(a.outputs, true, a.parameters);
      else this.job.sender.fail(a);
    }
    this.job.finish(this.ended!.startNs, this.ended!.times);
  }
}
