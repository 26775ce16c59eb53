import { parentPort, workerData } from 'node:worker_threads';
import type * as ort from 'onnxruntime-node';
import { openSession, type OrtFeeds, type OrtSession } from './session.js';

/** One ONNX Runtime session in its own thread (see runner.ts). Answers each run with its outputs' data. */
const { path, options } = workerData as { path: string; options: ort.InferenceSession.SessionOptions };
const port = parentPort!;

let session: OrtSession;
try {
  session = await openSession(path, options);
  port.postMessage({ ready: true });
} catch (e) {
  port.postMessage({ error: (e as Error).message });
  process.exit(0);
}

port.on('message', async (m: { id: number; feeds: OrtFeeds; fetches: string[] }) => {
  try {
    const results = await session.run(m.feeds, m.fetches);
    const outputs: Record<string, { dims: readonly number[]; data: unknown }> = {};
    for (const name of m.fetches) {
      const t = results[name]!;
      outputs[name] = { dims: t.dims, data: t.data };
    }
    port.postMessage({ id: m.id, outputs });
  } catch (e) {
    port.postMessage({ id: m.id, error: (e as Error).message });
  }
});
