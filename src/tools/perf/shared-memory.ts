/**
 * --shared-memory system: the input tensors of every step written once into one POSIX shared-memory object
 * (/dev/shm), an output region per output, both registered with the server; requests then name regions and
 * offsets instead of carrying data. Regions are unregistered and removed when the run ends.
 */
import { writeFileSync, rmSync } from 'node:fs';
import type { ShmPlacement, TensorData, Transport } from './transport.js';

export interface ShmSetup {
  placements(step: readonly TensorData[]): ShmPlacement;
  release(): Promise<void>;
}

export async function setUpSharedMemory(transport: Transport, steps: readonly (readonly TensorData[])[], outputs: readonly string[], outputSize: number): Promise<ShmSetup> {
  const tag = `nereid_perf_${process.pid}`;
  const inputName = `${tag}_input`;
  const offsets = new Map<readonly TensorData[], number[]>();
  const parts: Buffer[] = [];
  let at = 0;
  for (const step of steps) {
    const o: number[] = [];
    for (const t of step) {
      o.push(at);
      parts.push(t.bytes);
      // 64-byte alignment keeps every tensor's view aligned for any element type on the server.
      const pad = (64 - (t.bytes.length % 64)) % 64;
      if (pad) parts.push(Buffer.alloc(pad));
      at += t.bytes.length + pad;
    }
    offsets.set(step, o);
  }
  const made: string[] = [];
  const registered: string[] = [];
  const release = async (): Promise<void> => {
    for (const r of registered) await transport.unregisterShm(r).catch(() => undefined);
    for (const f of made) rmSync(f, { force: true });
  };
  try {
    const inputFile = `/dev/shm/${inputName}`;
    writeFileSync(inputFile, Buffer.concat(parts, Math.max(at, 1)), { mode: 0o600 });
    made.push(inputFile);
    await transport.registerShm(inputName, `/${inputName}`, Math.max(at, 1));
    registered.push(inputName);
    for (const [k, name] of outputs.entries()) {
      const region = `${tag}_output${k}`;
      const file = `/dev/shm/${region}`;
      writeFileSync(file, Buffer.alloc(outputSize), { mode: 0o600 });
      made.push(file);
      await transport.registerShm(region, `/${region}`, outputSize);
      registered.push(region);
      void name;
    }
  } catch (e) {
    await release();
    throw e;
  }
  return {
    placements(step): ShmPlacement {
      const o = offsets.get(step)!;
      return {
        inputs: step.map((t, k) => ({ name: t.name, region: inputName, offset: o[k]!, size: t.bytes.length })),
        outputs: outputs.map((name, k) => ({ name, region: `${tag}_output${k}`, size: outputSize })),
      };
    },
    release,
  };
}
