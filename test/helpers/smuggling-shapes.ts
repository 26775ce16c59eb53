/**
 * Request-smuggling shapes: requests whose body two parsers could frame differently, each with a second request
 * hidden where one of them would see its start (see test/frontends/http/smuggling.test.ts).
 */

/** The hidden request: were it read as one, its answer would be a 200 naming `smuggled` nowhere else sent. */
export const HIDDEN = 'GET /v2/models/simple/config?smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
export const INFER = '/v2/models/simple/infer';

/** [name, the request's head lines after its request line and Host, its body (holding the hidden request)] */
export const SHAPES: [string, string, string][] = [
  ['CL.TE: Content-Length and chunked', 'Content-Length: 6\r\nTransfer-Encoding: chunked\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.CL: chunked and Content-Length', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `5c\r\n${HIDDEN}\r\n0\r\n\r\n`],
  ['TE.TE: a second, bogus Transfer-Encoding', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: xchunked', 'Transfer-Encoding: xchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a space before the colon', 'Transfer-Encoding : chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a tab before the value', 'Transfer-Encoding:\tchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a folded value', 'Transfer-Encoding:\r\n chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a header line starting with a space', 'X: y\r\n Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: chunked, identity', 'Transfer-Encoding: chunked, identity\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: chunked in a bare-LF line', 'X: y\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['TE.TE: a vertical tab before chunked', 'Transfer-Encoding: \x0bchunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
  ['two different Content-Lengths', 'Content-Length: 4\r\nContent-Length: 60\r\n', `abcd${HIDDEN}`],
  ['Content-Length as a list', 'Content-Length: 4, 60\r\n', `abcd${HIDDEN}`],
  ['Content-Length with a sign', 'Content-Length: +4\r\n', `abcd${HIDDEN}`],
  ['Content-Length in hex', 'Content-Length: 0x4\r\n', `abcd${HIDDEN}`],
  ['a chunk size that overflows', 'Transfer-Encoding: chunked\r\n', `10000000000000004\r\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a chunk size with a bare-LF line end', 'Transfer-Encoding: chunked\r\n', `4\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a chunk without its CRLF', 'Transfer-Encoding: chunked\r\n', `4\r\nabcdX0\r\n\r\n${HIDDEN}`],
  ['a chunk extension with a bare LF', 'Transfer-Encoding: chunked\r\n', `4;a\nb\r\nabcd\r\n0\r\n\r\n${HIDDEN}`],
  ['a NUL in a header value', 'X: a\x00b\r\nContent-Length: 4\r\n', `abcd${HIDDEN}`],
  ['Transfer-Encoding on HTTP/1.0', 'Transfer-Encoding: chunked\r\nContent-Length: 4\r\n', `0\r\n\r\n${HIDDEN}`],
];

/** A shape's bytes: its request line (HTTP/1.0 where its name says so), Host, its lines, its body. */
export function shapeBytes([name, lines, body]: readonly [string, string, string]): string {
  return `POST ${INFER} HTTP/${name.endsWith('HTTP/1.0') ? '1.0' : '1.1'}\r\nHost: x\r\n${lines}\r\n${body}`;
}
