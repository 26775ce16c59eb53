/**
 * The bytes of one registered region, however they are reached. Callers have already checked that
 * [offset, offset + length) lies inside the region (Region.check); implementations do not check again.
 */
export interface RegionMemory {
  /** True when read() returns views of the client's memory rather than copies. */
  readonly mapped: boolean;
  /** Bytes [offset, offset + length) of the region: a view of the mapping, or a copy read from the object. */
  read(offset: number, length: number): Uint8Array;
  /** Writes `data` at `offset` of the region. */
  write(offset: number, data: Uint8Array): void;
  /** Releases the mapping or file; views handed out before read as empty afterwards. */
  close(): void;
}

/** Why a region could not be opened: the object is missing or unreadable, or the range is past its end. */
export class OpenError extends Error {
  constructor(readonly reason: 'open' | 'bounds' | 'map', message: string) {
    super(message);
  }
}
