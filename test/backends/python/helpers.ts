import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { FIXTURES, ROOT } from '../../helpers/paths.js';
import type { Tensor } from '../../../src/index.js';

export const PYTHON_FIXTURES = join(FIXTURES, 'python');
export const PYTHON_EXAMPLES = join(ROOT, 'examples', 'python_repository');

/**
 * Why Python tests cannot run here, or false. Outside CI a machine without /usr/bin/python3 and numpy (or torch,
 * when asked) skips them with the reason; in CI (CI=true, where .ci/run installs them) they must run.
 */
export function pythonSkip(modules = 'numpy'): string | false {
  const r = spawnSync('/usr/bin/python3', ['-c', `import ${modules}`], { encoding: 'utf8' });
  const missing = r.error ? '/usr/bin/python3 not found' : r.status !== 0 ? `/usr/bin/python3 cannot import ${modules}` : undefined;
  if (!missing) return false;
  return process.env.CI === 'true' ? false : `${missing} (install python3 and python3-numpy/python3-torch, or run in CI where they are required)`;
}

export function int32(name: string, values: number[], shape = [values.length]): Tensor {
  return { name, datatype: 'INT32', shape, data: new Uint8Array(new Int32Array(values).buffer) };
}

export function fp32(name: string, values: number[], shape = [values.length]): Tensor {
  return { name, datatype: 'FP32', shape, data: new Uint8Array(new Float32Array(values).buffer) };
}

export function text(name: string, values: string[], shape = [values.length]): Tensor {
  return { name, datatype: 'BYTES', shape, data: values.map((v) => new TextEncoder().encode(v)) };
}

const copyOf = (t: Tensor): ArrayBuffer => (t.data as Uint8Array).slice().buffer;
export const int32s = (t: Tensor): number[] => [...new Int32Array(copyOf(t))];
export const fp32s = (t: Tensor): number[] => [...new Float32Array(copyOf(t))];
export const strings = (t: Tensor): string[] => (t.data as Uint8Array[]).map((e) => new TextDecoder().decode(e));

export function output(outputs: readonly Tensor[], name: string): Tensor {
  const t = outputs.find((o) => o.name === name);
  if (!t) throw new Error(`no output ${name} among ${outputs.map((o) => o.name).join(', ')}`);
  return t;
}
