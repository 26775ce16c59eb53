/**
 * The `data` of each server-sent event in a byte stream, as text. Events end at a blank line; an event's
 * several `data:` lines join with newlines; comments (`:`) and other fields (event, id, retry) are skipped, as
 * OpenAI-compatible engines put everything in `data`. Line ends may be \n, \r\n or \r.
 */
export async function* readEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = '';
  let data: string[] = [];
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const end = lineEnd(pending, start);
      if (end < 0) break;
      const line = pending.slice(start, end);
      start = end + (pending[end] === '\r' && pending[end + 1] === '\n' ? 2 : 1);
      if (line === '') {
        if (data.length > 0) yield data.join('\n');
        data = [];
      } else if (line.startsWith('data:')) {
        data.push(line.slice(line[5] === ' ' ? 6 : 5));
      }
    }
    pending = pending.slice(start);
  }
  pending += decoder.decode();
  if (pending.startsWith('data:')) data.push(pending.slice(pending[5] === ' ' ? 6 : 5));
  if (data.length > 0) yield data.join('\n');
}

/** Index of the next \n or \r at or after `from`; -1 when none (a lone \r at the end waits for more text). */
function lineEnd(s: string, from: number): number {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 10) return i;
    if (c === 13) return i + 1 < s.length ? i : -1;
  }
  return -1;
}
