/** A connection error (RFC 9113 5.4.1): the code the GOAWAY that ends the connection carries. */
export class ConnectionError extends Error {
  constructor(readonly code: number, message: string) {
    super(message);
  }
}
