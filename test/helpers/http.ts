/** Small HTTP client helpers over fetch (undici), as a KServe client would send requests. */

export interface Reply {
  status: number;
  headers: Headers;
  body: Buffer;
  json(): any;
}

export async function request(url: string, init: { method?: string; body?: string | Buffer | Uint8Array; headers?: Record<string, string> } = {}): Promise<Reply> {
  const res = await fetch(url, { method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'), body: init.body as string | Uint8Array | undefined, headers: init.headers });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) };
}

export const postJson = (url: string, obj: unknown, headers: Record<string, string> = {}): Promise<Reply> =>
  request(url, { body: JSON.stringify(obj), headers: { 'Content-Type': 'application/json', ...headers } });

/** A binary-extension body: JSON header followed by blobs, with Inference-Header-Content-Length set. */
export function binaryBody(header: unknown, blobs: Uint8Array[]): { body: Buffer; headers: Record<string, string> } {
  const json = Buffer.from(JSON.stringify(header));
  return { body: Buffer.concat([json, ...blobs]), headers: { 'Inference-Header-Content-Length': String(json.byteLength), 'Content-Type': 'application/octet-stream' } };
}

/** Splits a binary-extension response into its JSON header and the blob of each binary output, by name. */
export function splitBinary(reply: Reply): { header: any; blobs: Map<string, Buffer> } {
  const len = Number(reply.headers.get('inference-header-content-length') ?? reply.body.byteLength);
  const header = JSON.parse(reply.body.subarray(0, len).toString('utf8'));
  const blobs = new Map<string, Buffer>();
  let at = len;
  for (const o of header.outputs) {
    const size = o.parameters?.binary_data_size;
    if (size === undefined) continue;
    blobs.set(o.name, reply.body.subarray(at, at + size));
    at += size;
  }
  return { header, blobs };
}
