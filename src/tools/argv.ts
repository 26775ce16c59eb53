/**
 * getopt_long-style flags as perf_analyzer and Model Analyzer take them: `--name value`, `--name=value`, `-x value`,
 * `-xvalue`, and switches that take no value (`--async`) or an optional one (`--async=true`).
 */

export interface FlagSpec {
  readonly name: string;
  readonly short?: string;
  /** 'value' needs an argument; 'switch' takes none (an `=value` is allowed). */
  readonly kind: 'value' | 'switch';
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
  const byLong = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]));
  const out: ParsedFlags = new Map();
  const add = (s: FlagSpec, v: string): void => {
    const list = out.get(s.name);
    if (list) list.push(v);
    else out.set(s.name, [v]);
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    let spec: FlagSpec | undefined;
    let inline: string | undefined;
    if (a.startsWith('--')) {
      const eq = a.indexOf('=');
      const name = eq < 0 ? a.slice(2) : a.slice(2, eq);
      spec = byLong.get(name);
      if (!spec) throw new UsageError(`unknown flag '--${name}'`);
      if (eq >= 0) inline = a.slice(eq + 1);
    } else if (a.startsWith('-') && a.length > 1) {
      spec = byShort.get(a[1]!);
      if (!spec) throw new UsageError(`unknown flag '${a.slice(0, 2)}'`);
      if (a.length > 2) inline = a.slice(2);
    } else {
      throw new UsageError(`unexpected argument '${a}'`);
    }
    if (spec.kind === 'switch') {
      add(spec, inline ?? 'true');
      continue;
    }
    if (inline === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`flag '${a}' needs a value`);
      inline = argv[++i]!;
    }
    add(spec, inline);
  }
  return out;
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
    const head = `  ${s.short ? `-${s.short}, ` : ''}--${s.name}${s.kind === 'value' ? ` ${s.arg ?? '<value>'}` : ''}`;
    lines.push(head, `        ${s.help}`);
  }
  return lines.join('\n') + '\n';
}
