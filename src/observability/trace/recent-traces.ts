/**
 * The latest traces finished in Triton mode, kept for the web console's trace view (GET /v2/nereid/traces):
 * a ring of at most RECENT_TRACES root traces (each with its children), each the comma-separated records of
 * Triton's trace file. A trace longer than RECENT_TRACE_CHARS (tensor data, at level TENSORS) is not kept.
 * Filled only as traces finish, so it holds nothing and costs nothing while tracing is off.
 */
export const RECENT_TRACES = 50;
export const RECENT_TRACE_CHARS = 256 * 1024;

export class RecentTraces {
  private readonly ring: string[] = [];
  private next = 0;

  add(records: string): void {
    if (records.length > RECENT_TRACE_CHARS) return;
    if (this.ring.length < RECENT_TRACES) this.ring.push(records);
    else this.ring[this.next] = records;
    this.next = (this.next + 1) % RECENT_TRACES;
  }

  /** `{"traces":[[records of one trace], …]}`, newest first, from the records' text as it is (nothing parsed). */
  json(): string {
    const n = this.ring.length;
    const out: string[] = [];
    for (let i = 1; i <= n; i++) out.push(`[${this.ring[(this.next - i + n) % n]}]`);
    return `{"traces":[${out.join(',')}]}`;
  }
}
