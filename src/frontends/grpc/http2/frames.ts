/** HTTP/2 frame layout and codes (RFC 9113 sections 4, 6, 7). */

export const FRAME_HEADER = 9;

export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PUSH_PROMISE = 0x5;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
export const CONTINUATION = 0x9;

export const END_STREAM = 0x1;
export const ACK = 0x1;
export const END_HEADERS = 0x4;
export const PADDED = 0x8;
export const PRIORITY_FLAG = 0x20;

export const NO_ERROR = 0x0;
export const PROTOCOL_ERROR = 0x1;
export const INTERNAL_ERROR = 0x2;
export const FLOW_CONTROL_ERROR = 0x3;
export const STREAM_CLOSED = 0x5;
export const FRAME_SIZE_ERROR = 0x6;
export const REFUSED_STREAM = 0x7;
export const CANCEL = 0x8;
export const COMPRESSION_ERROR = 0x9;
export const ENHANCE_YOUR_CALM = 0xb;

export const SETTINGS_HEADER_TABLE_SIZE = 0x1;
export const SETTINGS_ENABLE_PUSH = 0x2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 0x3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
export const SETTINGS_MAX_FRAME_SIZE = 0x5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 0x6;

/** The protocol's defaults, in force until the peer's SETTINGS say otherwise. */
export const DEFAULT_WINDOW = 65_535;
export const DEFAULT_MAX_FRAME = 16_384;
export const MAX_WINDOW = 2 ** 31 - 1;
export const MAX_FRAME_LIMIT = 2 ** 24 - 1;

/** What every client connection starts with (RFC 9113 3.4). */
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Writes a frame header at `at`. */
export function writeFrameHeader(out: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  out[at] = length >>> 16;
  out[at + 1] = (length >>> 8) & 0xff;
  out[at + 2] = length & 0xff;
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(streamId, at + 5);
}

/** A whole frame with its payload. */
export function frame(type: number, flags: number, streamId: number, payload: Buffer | null): Buffer {
  const length = payload === null ? 0 : payload.length;
  const out = Buffer.allocUnsafe(FRAME_HEADER + length);
  writeFrameHeader(out, 0, length, type, flags, streamId);
  if (payload !== null) payload.copy(out, FRAME_HEADER);
  return out;
}

/** A frame whose payload is one 32-bit value (RST_STREAM's code, WINDOW_UPDATE's increment). */
export function uint32Frame(type: number, streamId: number, value: number): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER + 4);
  writeFrameHeader(out, 0, 4, type, 0, streamId);
  out.writeUInt32BE(value, FRAME_HEADER);
  return out;
}
