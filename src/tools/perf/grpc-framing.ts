/** gRPC's length-prefixed message framing and its status headers, as the perf client reads and writes them. */
import type http2 from 'node:http2';

/** A message with gRPC's 5-byte prefix: not compressed, then the length. */
export function frame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** Splits received bytes into gRPC messages, keeping a partial one for the next chunk. */
export class Deframer {
  private pending: Buffer = Buffer.alloc(0);
  push(chunk: Buffer, each: (m: Buffer) => void): void {
    let buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buf.length >= 5) {
      const n = buf.readUInt32BE(1);
      if (buf.length < 5 + n) break;
      each(buf.subarray(5, 5 + n));
      buf = buf.subarray(5 + n);
    }
    this.pending = buf;
  }
}

/** The error a grpc-status header or trailer reports, null for OK or none. */
export function statusError(h: http2.IncomingHttpHeaders): string | null {
  const status = h['grpc-status'];
  if (status === undefined || status === '0') return null;
  const msg = h['grpc-message'];
  return decodeURIComponent(String(msg ?? `gRPC status ${String(status)}`));
}
