/** Reads Prometheus text exposition (format 0.0.4), as a scraper does, for the metrics tests. */

export interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Scrape {
  readonly series: Series[];
  /** Family name → type, from the `# TYPE` lines. */
  readonly types: ReadonlyMap<string, string>;
  readonly help: ReadonlyMap<string, string>;
  /** The series named `name` whose labels include `labels`. */
  find(name: string, labels?: Record<string, string>): Series[];
  /** The value of the one series named `name` with `labels`; throws when there is not exactly one. */
  value(name: string, labels?: Record<string, string>): number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Scrape {
  const series: Series[] = [];
  const types = new Map<string, string>();
  const help = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (TYPE|HELP) (\S+) (.*)$/.exec(line);
    if (meta) {
      (meta[1] === 'TYPE' ? types : help).set(meta[2]!, meta[3]!);
      continue;
    }
    const m = LINE.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_x, c: string) => (c === 'n' ? '\n' : c));
    series.push({ name: m[1]!, labels, value: Number(m[3]!.replace(/^Nan$/, 'NaN')) });
  }
  const find = (name: string, labels: Record<string, string> = {}): Series[] =>
    series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    series, types, help, find,
    value: (name, labels = {}) => {
      const found = find(name, labels);
      if (found.length !== 1) throw new Error(`${found.length} series ${name}${JSON.stringify(labels)}`);
      return found[0]!.value;
    },
  };
}
