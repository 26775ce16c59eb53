import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';

/**
 * The part of a request the handlers of whole-body routes read: node:http's IncomingMessage has it, and so
 * has the direct path's RequestHead with its socket (direct/request-head.ts).
 */
export interface RequestInfo {
  readonly url?: string | undefined;
  readonly method?: string | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly socket: Socket;
  /** When the request's first byte arrived (process.hrtime), when known: the direct path's, while tracing. */
  readonly receivedAt?: bigint | undefined;
}

/**
 * The part of an answer the handlers write through: node:http's ServerResponse has it, and so has the direct
 * path's DirectAnswer.
 */
export interface Answer {
  writeHead(status: number, headers: OutgoingHttpHeaders): unknown;
  write(chunk: string | Uint8Array): boolean;
  end(chunk?: string | Uint8Array): unknown;
  cork(): void;
  uncork(): void;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  readonly headersSent: boolean;
  shouldKeepAlive: boolean;
  destroy(): unknown;
  readonly socket: Socket | null;
}
