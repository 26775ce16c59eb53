import {
  DEFAULT_MAX_FRAME, DEFAULT_WINDOW, FLOW_CONTROL_ERROR, GOAWAY, MAX_FRAME_LIMIT, MAX_WINDOW, PROTOCOL_ERROR, SETTINGS,
  SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, SETTINGS_MAX_FRAME_SIZE,
  SETTINGS_MAX_HEADER_LIST_SIZE, WINDOW_UPDATE, frame, uint32Frame,
} from './frames.js';
import { ConnectionError } from './connection-error.js';

/** What this side of a connection announces and enforces. */
export interface ConnectionSettings {
  readonly maxConcurrentStreams: number;
  /** SETTINGS_MAX_HEADER_LIST_SIZE: larger header lists reach the server as a size without their fields. */
  readonly maxHeaderListBytes: number;
  /** The receive window of each stream and of the connection. */
  readonly streamWindow: number;
  readonly connectionWindow: number;
}

/** This side's first frames: its SETTINGS, and the connection window beyond the default when it is larger. */
export function settingsFrames(s: ConnectionSettings): Buffer {
  const entries: Array<[number, number]> = [
    [SETTINGS_MAX_CONCURRENT_STREAMS, s.maxConcurrentStreams],
    [SETTINGS_INITIAL_WINDOW_SIZE, s.streamWindow],
    [SETTINGS_MAX_HEADER_LIST_SIZE, s.maxHeaderListBytes],
  ];
  const payload = Buffer.allocUnsafe(6 * entries.length);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, 6 * i);
    payload.writeUInt32BE(value, 6 * i + 2);
  });
  const out = [frame(SETTINGS, 0, 0, payload)];
  if (s.connectionWindow > DEFAULT_WINDOW) out.push(uint32Frame(WINDOW_UPDATE, 0, s.connectionWindow - DEFAULT_WINDOW));
  return Buffer.concat(out);
}

/** Refuses a client's setting whose value RFC 9113 6.5.2 does not allow (a connection error). */
export function checkSetting(key: number, value: number): void {
  if (key === SETTINGS_ENABLE_PUSH && value > 1) throw new ConnectionError(PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH not 0 or 1');
  if (key === SETTINGS_INITIAL_WINDOW_SIZE && value > MAX_WINDOW) throw new ConnectionError(FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE too large');
  if (key === SETTINGS_MAX_FRAME_SIZE && (value < DEFAULT_MAX_FRAME || value > MAX_FRAME_LIMIT)) {
    throw new ConnectionError(PROTOCOL_ERROR, 'SETTINGS_MAX_FRAME_SIZE out of range');
  }
}

/** A GOAWAY frame: the last stream this side serves, and the error code. */
export function goawayFrame(lastStreamId: number, code: number): Buffer {
  const payload = Buffer.allocUnsafe(8);
  payload.writeUInt32BE(lastStreamId, 0);
  payload.writeUInt32BE(code, 4);
  return frame(GOAWAY, 0, 0, payload);
}
