/** A W3C trace context a client sent (https://www.w3.org/TR/trace-context/), checked. */
export interface ParentContext {
  readonly traceId: string;
  readonly spanId: string;
  readonly flags: number;
  readonly traceparent: string;
  readonly tracestate: string | undefined;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * The context of a traceparent value, or null for one that is absent or malformed (a malformed one is ignored,
 * as the specification asks: the request is then traced, or not, as any other).
 */
export function parseTraceparent(traceparent: string | undefined, tracestate: string | undefined): ParentContext | null {
  if (traceparent === undefined) return null;
  const v = traceparent.trim().toLowerCase();
  const m = TRACEPARENT.exec(v);
  if (m === null) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId: traceId!, spanId: spanId!, flags: parseInt(flags!, 16), traceparent: v, tracestate: tracestate?.trim() || undefined };
}

/** A traceparent value for a span. */
export function formatTraceparent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}
