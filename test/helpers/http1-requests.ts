import { chance, int, pick, type Rng } from './fuzz.js';

/**
 * Generated HTTP/1.1 request bytes for the differential fuzz of the direct path: mostly well-formed requests
 * (so that both parsers get past the request line and the interesting differences, in header values, framing
 * and pipelining, are reached), each with a few of the irregularities that RFC 9112 parsers disagree on, and
 * sometimes a byte or two mutated anywhere. Bytes are latin1 strings: one character, one byte.
 */
export function generateConnection(rng: Rng): string {
  const n = chance(rng, 0.6) ? 1 : chance(rng, 0.6) ? 2 : 3;
  let out = '';
  for (let i = 0; i < n; i++) out += generateRequest(rng);
  return chance(rng, 0.12) ? mutate(rng, out) : out;
}

const METHODS = ['HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'get', 'post', 'Post', 'CONNECT', 'PRI', 'GE', 'GETT', 'POST\t', 'TRACE'];
const TARGETS = [
  '/', '/v2/models/simple/infer', '/v2/health/ready', '/a?b=c&d', '/a/../b', '/%2e%2e/x', '//x', '/a#frag', '*',
  'http://h/x', 'x', '', '/a b', '/caf\xe9', '/\x7f', '/a\tb', '/a\x00', '/~!$&\'()*+,;=:@', '/a%zz', '/?',
];
const VERSIONS = ['HTTP/1.0', 'HTTP/1.2', 'HTTP/2.0', 'http/1.1', 'HTTP/11', 'HTTP/1.1 ', 'HTTP/1.1\t', 'HTTP/1', 'HTTP/0.9', 'HTTP /1.1', ''];
const NAMES = [
  'Content-Type', 'Accept', 'User-Agent', 'X-A', 'x-a', 'Inference-Header-Content-Length', 'Connection', 'Transfer-Encoding',
  'Expect', 'Upgrade', 'Content-Length', 'Host', 'TE', 'Trailer', 'Keep-Alive', 'Proxy-Connection', 'Content-Encoding',
  'Accept-Encoding', 'X Y', 'X\x00', '', 'X-\xe9', '__proto__', 'constructor', 'toString', 'X-"q"', 'X{}', 'X/y', 'hasOwnProperty',
];
const VALUES = [
  '', 'a', ' a ', '\ta\t', 'a b', 'keep-alive', 'Keep-Alive', 'close', 'upgrade', 'keep-alive, close', 'keep-alive ,', 'chunked',
  'identity', 'gzip, chunked', '100-continue', 'websocket', 'caf\xe9', 'a\x00b', 'a\x7fb', 'a\x01b', 'a\rb', 'a\nb', ' ', '\t',
  'x'.repeat(300), '"quoted"', '0', '5',
];

/** Content-Length spellings for a body of n bytes: the exact one mostly, then the ones parsers treat differently. */
function lengthValue(rng: Rng, n: number): string {
  if (chance(rng, 0.6)) return String(n);
  return pick(rng, [
    ` ${n}`, `${n} `, `  ${n}  `, `\t${n}`, `${n}\t`, `0${n}`, `00${n}`, `+${n}`, `-${n}`, `${n},${n}`, `${n}, ${n}`, `${n} ${n}`,
    '', ' ', `${n}x`, '0x10', '1e1', `${n}.0`, '99999999999999999999', '9007199254740993', String(n + 1), String(Math.max(0, n - 1)), `\x0b${n}`,
  ]);
}

function caseOf(rng: Rng, name: string): string {
  const r = int(rng, 4);
  return r === 0 ? name.toLowerCase() : r === 1 ? name.toUpperCase() : name;
}

export function generateRequest(rng: Rng): string {
  const post = chance(rng, 0.5);
  const method = chance(rng, 0.95) ? (post ? 'POST' : 'GET') : pick(rng, METHODS);
  const target = chance(rng, 0.9) ? pick(rng, TARGETS.slice(0, 6)) : pick(rng, TARGETS);
  const version = chance(rng, 0.96) ? 'HTTP/1.1' : pick(rng, VERSIONS);
  const sp = chance(rng, 0.99) ? ' ' : pick(rng, ['  ', '\t', '']);
  const eol = (): string => (chance(rng, 0.99) ? '\r\n' : pick(rng, ['\n', '\r', '\r\r\n', ' \r\n']));
  let out = `${chance(rng, 0.03) ? '\r\n' : ''}${method}${sp}${target}${sp}${version}${eol()}`;
  const bodyLength = int(rng, 3) === 0 ? 0 : int(rng, 80);
  const headers: [string, string][] = [];
  if (chance(rng, 0.97)) headers.push(['Host', chance(rng, 0.9) ? '127.0.0.1' : pick(rng, VALUES)]);
  if (post || chance(rng, 0.1)) {
    if (chance(rng, 0.93)) headers.push(['Content-Length', lengthValue(rng, bodyLength)]);
    if (chance(rng, 0.05)) headers.push(['Content-Length', lengthValue(rng, bodyLength)]);
  }
  for (let i = int(rng, 4); i > 0; i--) headers.push(chance(rng, 0.5) ? [pick(rng, NAMES.slice(0, 6)), pick(rng, VALUES.slice(0, 6))] : [pick(rng, NAMES), pick(rng, VALUES)]);
  if (chance(rng, 0.06)) headers.push(['Host', '127.0.0.1']);
  // The headers in a random order: where Host or Content-Length comes matters to no parser that is right.
  for (let i = headers.length - 1; i > 0; i--) {
    const j = int(rng, i + 1);
    [headers[i], headers[j]] = [headers[j]!, headers[i]!];
  }
  for (const [name, value] of headers) {
    const colon = chance(rng, 0.99) ? ':' : pick(rng, [' :', '\t:', '::']);
    const ows = chance(rng, 0.7) ? ' ' : pick(rng, ['', '  ', '\t', ' \t']);
    out += `${caseOf(rng, name)}${colon}${ows}${value}${chance(rng, 0.9) ? '' : pick(rng, [' ', '\t', ' \t'])}${eol()}`;
    if (chance(rng, 0.02)) out += `${pick(rng, [' ', '\t'])}folded${eol()}`;
  }
  out += eol();
  // The body: as long as declared, mostly; sometimes shorter or longer, which shifts the next request.
  const sent = chance(rng, 0.9) ? bodyLength : int(rng, 90);
  for (let i = 0; i < sent; i++) out += String.fromCharCode(chance(rng, 0.9) ? 97 + int(rng, 26) : int(rng, 256));
  return out;
}

/**
 * A generated connection whose lines all end in a bare LF, as hand-written clients send them: llhttp refuses it
 * at its first line. (A generator of its own, so that the seeded connections of generateConnection stay the same.)
 */
export function generateBareLfConnection(rng: Rng): string {
  return generateConnection(rng).replaceAll('\r\n', '\n');
}

const MUTANTS = ['\r', '\n', ' ', '\t', ':', '\x00', '\x7f', '\x80', '\xff', 'a', '0', '9', ',', '-'];

/** One to three bytes replaced, inserted or deleted anywhere. */
function mutate(rng: Rng, s: string): string {
  for (let k = 1 + int(rng, 3); k > 0 && s.length > 0; k--) {
    const at = int(rng, s.length);
    const op = int(rng, 3);
    const b = pick(rng, MUTANTS);
    s = op === 0 ? s.slice(0, at) + b + s.slice(at + 1) : op === 1 ? s.slice(0, at) + b + s.slice(at) : s.slice(0, at) + s.slice(at + 1);
  }
  return s;
}
