// Preloaded into the server by bench/stall.mjs (`node --import ./bench/stall-probe.mjs bin/nereid.js serve ...`,
// forked with an IPC channel): the event-loop delay of the server's main thread, sampled every millisecond by
// monitorEventLoopDelay. On { op: 'read', id } it answers { id, maxMs, p99Ms, meanMs } for the time since the
// last read, then starts over. The answer itself waits for the event loop, so a stall still running when the
// read is asked for is counted whole.
import { monitorEventLoopDelay } from 'node:perf_hooks';

if (process.send) {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  process.on('message', (m) => {
    if (m?.op !== 'read') return;
    process.send({ id: m.id, maxMs: h.max / 1e6, p99Ms: h.percentile(99) / 1e6, meanMs: h.mean / 1e6 });
    h.reset();
  });
  // The IPC channel must not keep the server alive once it has been told to stop; a benchmark that dies
  // (Ctrl-C) takes its server with it.
  process.channel?.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
