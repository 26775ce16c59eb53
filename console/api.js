// The public HTTP API, called from the page: the console has no endpoint or privilege of its own, so the
// server's restrictions, API keys and model control mode apply to it exactly as to any client.

/** What the operator typed in the Access panel; kept in this page's memory only (no cookie, no storage). */
export const access = { header: '', value: '', key: '' };

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function headers(json) {
  const h = {};
  if (access.header !== '') h[access.header] = access.value;
  if (access.key !== '') h.authorization = `Bearer ${access.key}`;
  if (json) h['content-type'] = 'application/json';
  return h;
}

/** One API call: the parsed JSON answer (undefined when empty), or an ApiError with the server's message. */
export async function call(method, path, body) {
  const res = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  const text = await res.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!res.ok) throw new ApiError(res.status, json?.error ?? (text || res.statusText));
  return json;
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);

/** A model's path segment: names may hold any character but '/'. */
export const modelPath = (name, version) => `/v2/models/${encodeURIComponent(name)}${version ? `/versions/${encodeURIComponent(version)}` : ''}`;
