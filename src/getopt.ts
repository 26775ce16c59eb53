/**
 * The one command-line reader of `nereid serve`, `perf` and `analyze`: GNU getopt_long's rules, which
 * tritonserver, perf_analyzer and Model Analyzer all parse with, so scripts written for them read the same here.
 * - `--name=value` and `--name value`; an option that requires a value always takes the next argument, even one
 *   that starts with `-`;
 * - `-x value` and `-xvalue` for options with a short name;
 * - with `abbreviations`, an unambiguous prefix of a long name (prefixes that fit only aliases of one option,
 *   same `id`, are not ambiguous);
 * - `--` ends the options: every argument after it is positional.
 * It only reads: what an option means, and the words of each refusal, belong to the command (GetoptError says
 * what went wrong, the command says it in its own words). Imports nothing, so every layer may use it.
 */

/** One option, as getopt_long's `struct option` describes it. */
export interface GetoptOption {
  /** The long name, without `--`. */
  readonly name: string;
  /** One character, without `-`. */
  readonly short?: string;
  /** Aliases share an id (their canonical name); defaults to the name. */
  readonly id?: string;
  /** getopt's required_argument, no_argument, optional_argument (a value only as `--name=value` or `-xvalue`). */
  readonly takes: 'value' | 'nothing' | 'optional';
}

export type GetoptProblem =
  /** `spelled`: the option as written, without any `=value`. */
  | { readonly kind: 'unknown'; readonly arg: string; readonly spelled: string }
  | { readonly kind: 'ambiguous'; readonly spelled: string; readonly fits: readonly GetoptOption[] }
  | { readonly kind: 'missing-value'; readonly arg: string; readonly option: GetoptOption }
  | { readonly kind: 'unwanted-value'; readonly arg: string; readonly option: GetoptOption };

export class GetoptError extends Error {
  constructor(readonly problem: GetoptProblem) {
    super(`${problem.kind} option`);
    this.name = 'GetoptError';
  }
}

/** An option given (value undefined when it takes none or an optional one was not given), or a positional. */
export type GetoptItem<O extends GetoptOption> =
  | { readonly option: O; readonly value: string | undefined; readonly arg: string }
  | { readonly option?: undefined; readonly positional: string };

export interface GetoptRules {
  /** Accept an unambiguous prefix of a long name, as getopt_long does. */
  readonly abbreviations: boolean;
}

/** The options and positionals of `argv`, in order; throws GetoptError at the first option it cannot read. */
export function* getopt<O extends GetoptOption>(argv: readonly string[], options: readonly O[], rules: GetoptRules): Generator<GetoptItem<O>> {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      for (const rest of argv.slice(i + 1)) yield { positional: rest };
      return;
    }
    if (arg === '-' || !arg.startsWith('-')) {
      yield { positional: arg };
      continue;
    }
    const long = arg.startsWith('--');
    const eq = long ? arg.indexOf('=') : -1;
    const spelled = long ? (eq < 0 ? arg : arg.slice(0, eq)) : arg.slice(0, 2);
    const option = long ? lookupLong(spelled, options, rules) : options.find((o) => o.short === arg[1]);
    if (!option) throw new GetoptError({ kind: 'unknown', arg, spelled });
    let value: string | undefined = long ? (eq < 0 ? undefined : arg.slice(eq + 1)) : (arg.length > 2 ? arg.slice(2) : undefined);
    if (option.takes === 'nothing' && value !== undefined) throw new GetoptError({ kind: 'unwanted-value', arg, option });
    if (option.takes === 'value' && value === undefined) {
      if (i + 1 >= argv.length) throw new GetoptError({ kind: 'missing-value', arg, option });
      value = argv[++i]!;
    }
    yield { option, value, arg };
  }
}

/** An exact long name first, else (with abbreviations) the one option, or aliases of one, the prefix fits. */
function lookupLong<O extends GetoptOption>(spelled: string, options: readonly O[], rules: GetoptRules): O | undefined {
  const name = spelled.slice(2);
  const exact = options.find((o) => o.name === name);
  if (exact || !rules.abbreviations || name === '') return exact;
  const fits = options.filter((o) => o.name.startsWith(name));
  if (new Set(fits.map((o) => o.id ?? o.name)).size > 1) throw new GetoptError({ kind: 'ambiguous', spelled, fits });
  return fits[0];
}
