import type { Labels } from './reporter.js';

/** Longest engine exposition read: a runaway engine cannot make a scrape hold more. */
export const MAX_ENGINE_EXPOSITION = 4 * 1024 * 1024;

/** The server's own namespaces: an engine's family there (a Triton behind Nereid) would clash with the server's. */
const OWN = /^(nv_|nereid_)/;

interface Family {
  help: string | undefined;
  type: string | undefined;
  readonly samples: string[];
}

/**
 * The Prometheus text of engines the server runs (llama-server, vLLM, SGLang, TGI), each sample given the
 * labels of the model version it serves (model, version, metric tags), so that they sit beside Nereid's own
 * under the same model label. Families of the same name from several engines merge under one HELP and TYPE.
 * An engine's own label of the same name as one of ours is kept as `exported_<name>`, as Prometheus does;
 * families in the server's own namespaces (nv_, nereid_) are left out.
 */
export function relabelledExposition(engines: readonly { labels: Labels; text: string }[]): string {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { help: undefined, type: undefined, samples: [] }));
    return f;
  };
  for (const { labels, text } of engines) {
    const ours = Object.entries(labels).map(([k, v]) => `${k}="${escapeValue(v)}"`).join(',');
    let current = '';
    for (const line of text.slice(0, MAX_ENGINE_EXPOSITION).split('\n')) {
      const meta = /^#\s+(HELP|TYPE)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(.*)$/.exec(line);
      if (meta) {
        current = meta[2]!;
        const f = family(current);
        if (meta[1] === 'HELP') f.help ??= meta[3];
        else f.type ??= meta[3];
        continue;
      }
      if (line === '' || line.startsWith('#')) continue;
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
      if (!name) continue;
      // A histogram's or summary's _bucket, _sum and _count lines belong to the family declared above them.
      const owner = current !== '' && name.startsWith(current) ? current : name;
      if (OWN.test(owner)) continue;
      const sample = relabel(line, name, ours, labels);
      if (sample) family(owner).samples.push(sample);
    }
  }
  let out = '';
  for (const [name, f] of families) {
    if (f.samples.length === 0) continue;
    if (f.help !== undefined) out += `# HELP ${name} ${f.help}\n`;
    if (f.type !== undefined) out += `# TYPE ${name} ${f.type}\n`;
    out += f.samples.join('\n') + '\n';
  }
  return out;
}

/** One sample line with our labels first; undefined when it is not a sample line. */
function relabel(line: string, name: string, ours: string, labels: Labels): string | undefined {
  const rest = line.slice(name.length);
  if (!rest.startsWith('{')) return /^\s+\S/.test(rest) ? `${name}{${ours}}${rest}` : undefined;
  const close = rest.lastIndexOf('}');
  if (close < 0) return undefined;
  let theirs = rest.slice(1, close).trim().replace(/,$/, '');
  for (const k of Object.keys(labels)) theirs = theirs.replace(new RegExp(`(^|,)\\s*${k}=`), `$1exported_${k}=`);
  return `${name}{${ours}${theirs === '' ? '' : `,${theirs}`}}${rest.slice(close + 1)}`;
}

function escapeValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
