/** The request target as the HTTP and OpenAI frontends both route it (RFC 9112 3.2). */

const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;

/**
 * The origin form (path and query) of a request target. RFC 9112 (3.2.2) has servers accept the absolute form
 * (`POST http://host/v2/...`, as clients speaking to a proxy send it) and route it by its path; its authority
 * is not the server's to check. Any other target (`*`, a scheme this server does not speak) is returned as it
 * was, which routes nowhere (404).
 */
export function originForm(target: string): string {
  const m = ABSOLUTE_FORM.exec(target);
  if (m === null) return target;
  const rest = target.slice(m[0].length);
  return rest.charCodeAt(0) === 0x2f ? rest : `/${rest}`;
}
