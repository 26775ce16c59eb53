/**
 * The command line as the web console's server view shows it (GET /v2/nereid/server): each flag with its
 * value (`--name value` joined as `--name=value`), with the values that are secrets hidden: the header
 * values of --http-restricted-api and --grpc-restricted-protocol, and any `password=`, `token=`, `secret=` or
 * `key=` setting of a flag such as --cache-config.
 */
export function shownFlags(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i]!;
    const next = argv[i + 1];
    if (a.startsWith('--') && !a.includes('=') && next !== undefined && !next.startsWith('--')) {
      a = `${a}=${next}`;
      i++;
    }
    out.push(hide(a));
  }
  return out;
}

const RESTRICTED = /^(--(?:http-restricted-api|grpc-restricted-protocol)=[^:]*:[^=]*=).*$/;
const SECRET_SETTING = /((?:password|token|secret|key)=)[^,]*/gi;

function hide(flag: string): string {
  const r = RESTRICTED.exec(flag);
  if (r) return `${r[1]}<hidden>`;
  return flag.replace(SECRET_SETTING, '$1<hidden>');
}
