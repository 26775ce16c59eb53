/**
 * The client tools' flags as perf_analyzer and Model Analyzer take them: getopt_long (src/getopt.ts) with short
 * names and exact long names; a switch takes no value (`--async`) or an inline one (`--async=true`).
 */
import { getopt, GetoptError, type GetoptOption, type GetoptProblem } from '../getopt.js';

export interface FlagSpec extends GetoptOption {
  /** 'value' needs an argument; 'optional' is a switch (an `=value` is allowed). */
  readonly takes: 'value' | 'optional';
  readonly help: string;
  readonly arg?: string;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Every occurrence of every flag, by long name, in order. */
export type ParsedFlags = Map<string, string[]>;

export function parseArgv(argv: readonly string[], specs: readonly FlagSpec[]): ParsedFlags {
  const out: ParsedFlags = new Map();
  try {
    for (const item of getopt(argv, specs, { abbreviations: false })) {
      if (!item.option) throw new UsageError(`unexpected argument '${item.positional}'`);
      const list = out.get(item.option.name);
      if (list) list.push(item.value ?? 'true');
      else out.set(item.option.name, [item.value ?? 'true']);
    }
  } catch (e) {
    if (e instanceof GetoptError) throw new UsageError(refusal(e.problem));
    throw e;
  }
  return out;
}

function refusal(p: GetoptProblem): string {
  switch (p.kind) {
    case 'missing-value': return `flag '${p.arg}' needs a value`;
    case 'unknown': return `unknown flag '${p.spelled}'`;
    // Neither arises with these specs (no abbreviations, no 'nothing' option); worded for completeness.
    case 'ambiguous': return `ambiguous flag '${p.spelled}'`;
    case 'unwanted-value': return `flag '${p.arg}' takes no value`;
  }
}

export function last(f: ParsedFlags, name: string): string | undefined {
  return f.get(name)?.at(-1);
}

export function intFlag(f: ParsedFlags, name: string, def: number, min = 0): number {
  const v = last(f, name);
  if (v === undefined) return def;
  if (!/^-?\d+$/.test(v) || Number(v) < min) throw new UsageError(`--${name} must be an integer of at least ${min}, got '${v}'`);
  return Number(v);
}

export function numFlag(f: ParsedFlags, name: string, def: number | undefined, min = 0): number | undefined {
  const v = last(f, name);
  if (v === undefined) return def;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < min) throw new UsageError(`--${name} must be a number of at least ${min}, got '${v}'`);
  return n;
}

export function boolFlag(f: ParsedFlags, name: string, def = false): boolean {
  const v = last(f, name);
  if (v === undefined) return def;
  if (['true', '1', 'on', 'yes'].includes(v.toLowerCase())) return true;
  if (['false', '0', 'off', 'no'].includes(v.toLowerCase())) return false;
  throw new UsageError(`--${name} must be true or false, got '${v}'`);
}

export function choiceFlag<T extends string>(f: ParsedFlags, name: string, choices: readonly T[], def: T): T {
  const v = last(f, name);
  if (v === undefined) return def;
  if (!(choices as readonly string[]).includes(v)) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got '${v}'`);
  return v as T;
}

export function usageText(title: string, specs: readonly FlagSpec[]): string {
  const lines = [title, ''];
  for (const s of specs) {
    const head = `  ${s.short ? `-${s.short}, ` : ''}--${s.name}${s.takes === 'value' ? ` ${s.arg ?? '<value>'}` : ''}`;
    lines.push(head, `        ${s.help}`);
  }
  return lines.join('\n') + '\n';
}
