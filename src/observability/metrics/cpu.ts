import { readFile } from 'node:fs/promises';

/**
 * The host's CPU utilization and memory, polled from /proc as Triton's metrics thread polls them: utilization
 * is the busy share of all cores' time since the previous poll (iowait counts as idle), used memory is
 * MemTotal - MemAvailable. On a system without /proc the values stay 0.
 */
export class CpuPoller {
  utilization = 0;
  memoryTotalBytes = 0;
  memoryUsedBytes = 0;
  private previous: { busy: number; total: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  /** Polls now, then every `intervalMs`; the timer does not keep the process alive. */
  start(intervalMs: number): void {
    this.polling = this.poll();
    this.timer = setInterval(() => {
      this.polling = this.poll();
    }, intervalMs).unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Resolves once the poll under way (if any) has finished. */
  settled(): Promise<void> {
    return this.polling ?? Promise.resolve();
  }

  private async poll(): Promise<void> {
    const [stat, meminfo] = await Promise.all([readFile('/proc/stat', 'utf8').catch(() => ''), readFile('/proc/meminfo', 'utf8').catch(() => '')]);
    this.readStat(stat);
    this.readMeminfo(meminfo);
  }

  private readStat(text: string): void {
    const line = text.slice(0, text.indexOf('\n'));
    if (!line.startsWith('cpu ')) return;
    // user nice system idle iowait irq softirq steal (guest time is already inside user and nice)
    const f = line.split(/\s+/).slice(1, 9).map(Number);
    const idle = f[3]! + f[4]!;
    const total = f.reduce((a, b) => a + b, 0);
    const busy = total - idle;
    const p = this.previous;
    if (p && total > p.total) this.utilization = (busy - p.busy) / (total - p.total);
    this.previous = { busy, total };
  }

  private readMeminfo(text: string): void {
    const kb = (key: string): number | undefined => {
      const m = new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text);
      return m ? Number(m[1]) * 1024 : undefined;
    };
    const total = kb('MemTotal');
    const available = kb('MemAvailable');
    if (total === undefined || available === undefined || available > total) return;
    this.memoryTotalBytes = total;
    this.memoryUsedBytes = total - available;
  }
}
