import type { InferenceSession } from 'onnxruntime-node';
import { invalidArg } from '../../errors.js';
import type { ModelConfig } from '../../config/types.js';

/**
 * Session options from a model's config, with the parameter names of Triton's onnxruntime backend. Absent
 * parameters keep ONNX Runtime's own defaults, as Triton does.
 */
export function sessionOptions(config: ModelConfig): InferenceSession.SessionOptions {
  const p = (key: string): string | undefined => config.parameters[key]?.string_value;
  const opts: InferenceSession.SessionOptions = { executionProviders: ['cpu'] };
  const intra = intParam(p('intra_op_thread_count'), 'intra_op_thread_count');
  if (intra !== undefined && intra > 0) opts.intraOpNumThreads = intra;
  const inter = intParam(p('inter_op_thread_count'), 'inter_op_thread_count');
  if (inter !== undefined && inter > 0) opts.interOpNumThreads = inter;
  const mode = intParam(p('execution_mode'), 'execution_mode');
  if (mode !== undefined) opts.executionMode = mode === 1 ? 'parallel' : 'sequential';
  const arena = p('enable_mem_arena');
  if (arena !== undefined) opts.enableCpuMemArena = boolParam(arena);
  const pattern = p('enable_mem_pattern');
  if (pattern !== undefined) opts.enableMemPattern = boolParam(pattern);
  opts.graphOptimizationLevel = graphLevel(config.optimization?.graph?.level ?? 0);
  return opts;
}

function graphLevel(level: number): InferenceSession.SessionOptions['graphOptimizationLevel'] {
  if (level === -1) return 'basic';
  if (level === 1) return 'extended';
  if (level === 2) return 'disabled';
  return 'all';
}

function intParam(v: string | undefined, key: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw invalidArg(`parameter '${key}' must be an integer, got '${v}'`);
  return n;
}

function boolParam(v: string): boolean {
  return v === '1' || v.toLowerCase() === 'true';
}
