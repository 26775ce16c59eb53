import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits until `check` holds, looking again every few milliseconds. The limit is not a measure of speed: it only
 * turns a state that never comes into a failure naming what was awaited, however busy the machine is.
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await sleep(5);
  }
}
