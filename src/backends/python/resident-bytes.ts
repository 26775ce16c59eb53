import { readFileSync } from 'node:fs';

/**
 * A process's resident memory (VmRSS of /proc/<pid>/status), in bytes: what a Python stub holds, which the
 * server's own RSS does not show. Read synchronously at each call (one small procfs read, made when memory is
 * asked for, not per request). Undefined when the process is gone or the system has no procfs.
 */
export function residentBytes(pid: number): number | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  const m = /^VmRSS:\s*(\d+)\s*kB$/m.exec(status);
  return m ? Number(m[1]) * 1024 : undefined;
}
