/**
 * Tool calls as an engine answers them, kept to OpenAI's fields for the response parameter `tool_calls`: a
 * whole call is {id, type, function: {name, arguments}}; a streamed piece is {index} with whichever of id,
 * type, function.name and function.arguments it carries. Anything else an engine adds is left out, and a call
 * that is not in this shape is an engine error.
 */
export type ToolCall = Record<string, unknown>;

/** Calls one answer may hold: a bound on what an engine can make the gateway pass on. */
const MAX_CALLS = 128;

/** The engine's list, checked and kept to OpenAI's fields; undefined for none. `piece`: a stream's deltas. */
export function toolCallsOf(v: unknown, piece: boolean): ToolCall[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > MAX_CALLS) throw new Error(`tool_calls is not a list of at most ${MAX_CALLS} calls`);
  if (v.length === 0) return undefined;
  return v.map((c: unknown) => {
    if (typeof c !== 'object' || c === null) throw new Error('a tool call is not an object');
    const { index, id, type, function: f } = c as Record<string, unknown>;
    const fn = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>;
    const call: ToolCall = {};
    if (piece) {
      if (typeof index !== 'number') throw new Error('a streamed tool call has no index');
      call['index'] = index;
    }
    if (typeof id === 'string') call['id'] = id;
    if (typeof type === 'string') call['type'] = type;
    const out: Record<string, string> = {};
    if (typeof fn['name'] === 'string') out['name'] = fn['name'];
    if (typeof fn['arguments'] === 'string') out['arguments'] = fn['arguments'];
    if (!piece && (call['id'] === undefined || out['name'] === undefined || out['arguments'] === undefined)) throw new Error('a tool call lacks its id, name or arguments');
    call['function'] = out;
    return call;
  });
}

/**
 * A streamed answer's calls put back together (for a request that did not ask to stream, which a decoupled
 * model still reads from the engine as a stream): the pieces of each index joined, its arguments in order.
 */
export class ToolCallAssembler {
  private readonly calls: { id?: unknown; type?: unknown; name: string; arguments: string }[] = [];

  push(pieces: readonly ToolCall[]): void {
    for (const p of pieces) {
      const index = p['index'] as number;
      if (!Number.isInteger(index) || index < 0 || index >= MAX_CALLS) throw new Error(`a streamed tool call has the index ${index}`);
      const call = this.calls[index] ??= { name: '', arguments: '' };
      const f = p['function'] as Record<string, string>;
      if (p['id'] !== undefined) call.id = p['id'];
      if (p['type'] !== undefined) call.type = p['type'];
      if (f['name'] !== undefined) call.name += f['name'];
      if (f['arguments'] !== undefined) call.arguments += f['arguments'];
    }
  }

  /** The whole calls; undefined when none came. */
  whole(): ToolCall[] | undefined {
    if (this.calls.length === 0) return undefined;
    return [...this.calls].map((c) => ({ id: c?.id, type: c?.type ?? 'function', function: { name: c?.name ?? '', arguments: c?.arguments ?? '' } }));
  }
}
