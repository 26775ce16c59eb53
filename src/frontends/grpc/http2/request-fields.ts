/**
 * A request's header fields as one header block decodes them, checked as RFC 9113 8.2-8.3 asks of a server:
 * lowercase names of token characters, no NUL, CR or LF in values, pseudo-header fields first, only the
 * request ones, once each, with :method, :scheme and a non-empty :path present, and none of the connection-specific
 * fields. A block that breaks a rule is a malformed request: its stream is reset, the connection goes on.
 */

const METHOD = 1;
const SCHEME = 2;
const PATH = 4;
const AUTHORITY = 8;
const REQUIRED = METHOD | SCHEME | PATH;
const PSEUDO: Readonly<Record<string, number>> = { ':method': METHOD, ':scheme': SCHEME, ':path': PATH, ':authority': AUTHORITY };

const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
const BAD_NAME = /[^a-z0-9!#$%&'*+\-.^_`|~]/;
const BAD_VALUE = /[\0\r\n]/;

export class RequestFields {
  private headers: Record<string, string> = Object.create(null) as Record<string, string>;
  private malformed = false;
  private regularSeen = false;
  private pseudo = 0;

  /** Takes each decoded field; made once, so decoding a block allocates no callback. */
  readonly sink = (name: string, value: string): void => {
    if (BAD_VALUE.test(value)) this.malformed = true;
    if (name.charCodeAt(0) === 0x3a) {
      const bit = PSEUDO[name];
      // RFC 9113 8.3.1: :path is never empty for http and https.
      if (bit === undefined || (this.pseudo & bit) !== 0 || this.regularSeen || (bit === PATH && value.length === 0)) this.malformed = true;
      else this.pseudo |= bit;
      this.headers[name] = value;
      return;
    }
    this.regularSeen = true;
    if (name.length === 0 || BAD_NAME.test(name) || CONNECTION_SPECIFIC.has(name) || (name === 'te' && value !== 'trailers')) {
      this.malformed = true;
    }
    const before = this.headers[name];
    this.headers[name] = before === undefined ? value : `${before}, ${value}`;
  };

  start(): void {
    this.headers = Object.create(null) as Record<string, string>;
    this.malformed = false;
    this.regularSeen = false;
    this.pseudo = 0;
  }

  /** True when the block was a well-formed request's. */
  valid(): boolean {
    return !this.malformed && (this.pseudo & REQUIRED) === REQUIRED;
  }

  take(): Record<string, string> {
    return this.headers;
  }
}
