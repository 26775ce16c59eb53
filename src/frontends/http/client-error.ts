import type { Duplex } from 'node:stream';

/**
 * The answer to a request Node's HTTP parser refuses before any handler sees it. A body framed both by
 * Transfer-Encoding and by Content-Length is refused on purpose (Triton takes it): two framings of one body are
 * how requests are smuggled past a proxy. The client hears why, in the JSON error form of every other refusal;
 * anything else the parser refuses keeps a bare 400.
 */
export function answerClientError(err: Error & { code?: string; reason?: string }, socket: Duplex): void {
  if (!socket.writable) return;
  // A request that cannot be read while the answer to the one before it is being written: that answer is cut
  // short rather than another written into its middle (node:http's own clientError answer does the same).
  if (answerBegun(socket)) {
    socket.destroy();
    return;
  }
  // A request that did not arrive within headersTimeout: node:http's own answer, as the direct path gives it.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    socket.end(REQUEST_TIMEOUT);
    return;
  }
  if (!bothFramings(err)) {
    socket.end(BAD_REQUEST);
    return;
  }
  const body = JSON.stringify({ error: BOTH_FRAMINGS });
  socket.end(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

/** The answer to a request the parser refuses, on either path (a request cut short by its client's end too). */
export const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

/** The answer to a request that did not arrive in time, on either path. */
export const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

const BOTH_FRAMINGS = 'the request has both Transfer-Encoding and Content-Length headers; send only one of them (a body with two framings is refused, as it allows request smuggling)';

function bothFramings(err: { code?: string; reason?: string }): boolean {
  return (err.code === 'HPE_INVALID_CONTENT_LENGTH' || err.code === 'HPE_INVALID_TRANSFER_ENCODING' || err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH')
    && /Content-Length/i.test(err.reason ?? '') && /Transfer-Encoding/i.test(err.reason ?? '');
}

/**
 * Whether an answer on the connection has begun and not finished (a stream of events, say). A 400 written then
 * would land inside it, and the client, or a proxy pipelining on the connection, would read it as part of that
 * answer or take it for the answer to another request.
 */
function answerBegun(socket: Duplex): boolean {
  const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  return current !== undefined && current !== null && current.headersSent === true;
}
