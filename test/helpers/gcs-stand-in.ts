import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A stand-in for Google Cloud Storage: no GCS emulator can run here (Google's and the community's are not on
 * npm or Debian), so this serves only the JSON API calls the gs:// source makes: list objects (prefix,
 * delimiter, pages), get an object's media, get its metadata. Objects live in memory, set by the test.
 */
export interface GcsStandIn {
  readonly endpoint: string;
  readonly objects: Map<string, Buffer>;
  /** The next `n` requests are answered 503, as a store that is briefly unavailable. */
  failNext(n: number): void;
  /** Requests seen, as "METHOD path". */
  readonly requests: string[];
  close(): Promise<void>;
}

export async function startGcsStandIn(bucket: string, pageSize = 1000): Promise<GcsStandIn> {
  const objects = new Map<string, Buffer>();
  const generations = new Map<string, number>();
  const requests: string[] = [];
  let failing = 0;
  let generation = 1;
  const meta = (name: string, data: Buffer) => ({
    kind: 'storage#object', bucket, name, size: String(data.length), generation: String(generations.get(name)),
    etag: `e${generations.get(name)}`, md5Hash: createHash('md5').update(data).digest('base64'),
  });
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const u = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${u.pathname}`);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (failing > 0) {
      failing--;
      return json(503, { error: { code: 503, message: 'Service Unavailable' } });
    }
    const m = /^(?:\/download)?(?:\/storage\/v1)?\/b\/([^/]+)\/o(?:\/(.+))?$/.exec(u.pathname);
    if (!m || req.method !== 'GET') return json(400, { error: { code: 400, message: `not served here: ${req.method} ${u.pathname}` } });
    if (decodeURIComponent(m[1]!) !== bucket) return json(404, { error: { code: 404, message: 'The specified bucket does not exist.' } });
    if (m[2] !== undefined) {
      const name = decodeURIComponent(m[2]);
      const data = objects.get(name);
      if (!data) return json(404, { error: { code: 404, message: 'No such object' } });
      if (u.searchParams.get('alt') === 'media') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': data.length }).end(data);
        return;
      }
      return json(200, meta(name, data));
    }
    const prefix = u.searchParams.get('prefix') ?? '';
    const delimiter = u.searchParams.get('delimiter');
    const start = Number(u.searchParams.get('pageToken') ?? 0);
    const names = [...objects.keys()].filter((n) => n.startsWith(prefix)).sort();
    const items: ReturnType<typeof meta>[] = [];
    const prefixes = new Set<string>();
    for (const n of names) {
      const cut = delimiter ? n.indexOf(delimiter, prefix.length) : -1;
      if (cut >= 0) prefixes.add(n.slice(0, cut + 1));
      else items.push(meta(n, objects.get(n)!));
    }
    const page = items.slice(start, start + pageSize);
    json(200, { kind: 'storage#objects', items: page, prefixes: start === 0 ? [...prefixes] : [], ...(start + pageSize < items.length ? { nextPageToken: String(start + pageSize) } : {}) });
  };
  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const trackingSet = objects.set.bind(objects);
  objects.set = (k: string, v: Buffer) => {
    generations.set(k, generation++);
    return trackingSet(k, v);
  };
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    objects, requests,
    failNext: (n) => { failing = n; },
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
