/**
 * The bytes of one registered region, however they are reached. Callers have already checked that
 * [offset, offset + length) lies inside the region (Region.check); implementations do not check again.
 *
 * The client that made the object may shrink it (ftruncate) at any time, also while a request uses it. No
 * access here can fault or throw for that: the bytes past the object's new end read as zeros and writes to them
 * are dropped, and intact() turns false for good, so that whoever used the region fails its request.
 */
export interface RegionMemory {
  /** True when read() returns views of the client's memory rather than copies. */
  readonly mapped: boolean;
  /** Bytes [offset, offset + length) of the region: a view of the mapping, or a copy read from the object. */
  read(offset: number, length: number): Uint8Array;
  /** Writes `data` at `offset` of the region. */
  write(offset: number, data: Uint8Array): void;
  /** False once an access found the object smaller than the region: its bytes can no longer be trusted. */
  intact(): boolean;
  /** Releases the mapping or file; views handed out before read as empty afterwards. */
  close(): void;
}

/** Why a region could not be opened: the object is missing or unreadable, or the range is past its end. */
export class OpenError extends Error {
  constructor(readonly reason: 'open' | 'bounds' | 'map', message: string) {
    super(message);
  }
}
