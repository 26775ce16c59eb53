/**
 * KServe v2 over HTTP/1.1 with Triton's binary tensor extension: each request is one pre-encoded buffer (JSON
 * header, then the raw tensor bytes) sent over a pool of keep-alive connections, one request per connection at a
 * time. Responses are checked for status only; their bodies are drained, not decoded.
 */
import { readFileSync } from 'node:fs';
import { Pool, request as undiciRequest, Agent } from 'undici';
import type { Dispatcher } from 'undici';
import { modelInfoFrom, type ModelInfo } from './model-info.js';
import { sumStats, type Completion, type Prepared, type RequestSpec, type SequenceStep, type ServerStats, type Transport } from './transport.js';
import type { TlsOptions } from './options.js';

interface HttpPrepared {
  /** undici's dispatch options, built once and reused by every send. */
  readonly opts: Dispatcher.DispatchOptions;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
  /** For sequence requests, whose JSON header differs per request. */
  readonly header: Record<string, unknown>;
  readonly binary: Buffer;
}

export interface HttpTransportOptions {
  readonly url: string;
  readonly model: string;
  readonly version: string;
  readonly connections: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly tls: TlsOptions | undefined;
}

export function createHttpTransport(o: HttpTransportOptions): Transport {
  const scheme = o.tls ? 'https' : 'http';
  const origin = `${scheme}://${o.url}`;
  const connect = o.tls
    ? {
        ca: o.tls.ca ? readFileSync(o.tls.ca) : undefined,
        cert: o.tls.cert ? readFileSync(o.tls.cert) : undefined,
        key: o.tls.key ? readFileSync(o.tls.key) : undefined,
        rejectUnauthorized: o.tls.verifyPeer,
        ...(o.tls.verifyHost ? {} : { checkServerIdentity: () => undefined }),
      }
    : undefined;
  const pool = new Pool(origin, { connections: o.connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: 0, bodyTimeout: 0, connect });
  // Control calls (metadata, statistics) on their own connection, so they never wait behind the load.
  const control = new Agent({ connections: 2, connect });
  const extra = Object.fromEntries(o.headers);
  const modelPath = `/v2/models/${encodeURIComponent(o.model)}${o.version ? `/versions/${encodeURIComponent(o.version)}` : ''}`;

  async function getJson(path: string, method: Dispatcher.HttpMethod = 'GET', body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await undiciRequest(origin + path, {
      method,
      dispatcher: control,
      headers: body === undefined ? extra : { ...extra, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let json: Record<string, unknown> = {};
    try {
      json = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      json = { error: text.slice(0, 200) };
    }
    return { status: res.statusCode, json };
  }

  const check = (r: { status: number; json: Record<string, unknown> }, what: string): Record<string, unknown> => {
    if (r.status !== 200) throw new Error(`${what}: ${String(r.json.error ?? `HTTP ${r.status}`)}`);
    return r.json;
  };

  return {
    kind: 'http',
    async modelInfo(): Promise<ModelInfo> {
      const meta = check(await getJson(modelPath), `model '${o.model}'`);
      const cfg = await getJson(`${modelPath}/config`);
      return modelInfoFrom(meta, cfg.status === 200 ? cfg.json : undefined, o.version);
    },
    async stats(): Promise<ServerStats | undefined> {
      const r = await getJson(`${modelPath}/stats`);
      if (r.status !== 200 || !Array.isArray(r.json.model_stats)) return undefined;
      return sumStats(r.json.model_stats as Record<string, unknown>[], o.model, o.version);
    },
    async registerShm(name, key, byteSize): Promise<void> {
      check(await getJson(`/v2/systemsharedmemory/region/${encodeURIComponent(name)}/register`, 'POST', { key, offset: 0, byte_size: byteSize }), 'registering shared memory');
    },
    async unregisterShm(name): Promise<void> {
      await getJson(`/v2/systemsharedmemory/region/${encodeURIComponent(name)}/unregister`, 'POST', {});
    },
    prepare(spec: RequestSpec): Prepared {
      return encodeHttp(spec, `${modelPath}/infer`, extra);
    },
    send(p: Prepared, seq: SequenceStep | undefined, c: Completion): void {
      const r = p as HttpPrepared;
      if (seq === undefined) {
        pool.dispatch(r.opts, new Exchange(c));
        return;
      }
      const body = withSequence(r, seq);
      const headers = { ...r.headers, 'inference-header-content-length': String(body.length - r.binary.length) };
      pool.dispatch({ path: r.path, method: 'POST', headers, body }, new Exchange(c));
    },
    async close(): Promise<void> {
      await Promise.all([pool.close(), control.close()]);
    },
  };
}

/** One request's progress through undici's dispatcher (the raw-header handler API: nothing is parsed). */
class Exchange implements Dispatcher.DispatchHandler {
  private status = 0;
  private error: Buffer[] | undefined;
  constructor(private readonly c: Completion) {}
  onConnect(): void {}
  onHeaders(statusCode: number): boolean {
    this.status = statusCode;
    if (statusCode !== 200) this.error = [];
    return true;
  }
  onData(chunk: Buffer): boolean {
    if (this.error) this.error.push(chunk);
    return true;
  }
  onComplete(): void {
    if (this.error) {
      this.c.done(errorText(this.status, Buffer.concat(this.error)));
      return;
    }
    this.c.response();
    this.c.done(null);
  }
  onError(err: Error): void {
    this.c.done(err.message);
  }
}

function errorText(status: number, body: Buffer): string {
  try {
    const j = JSON.parse(body.toString('utf8')) as { error?: string };
    if (typeof j.error === 'string') return j.error;
  } catch {
    // not JSON: show the start of the body
  }
  return `HTTP ${status}${body.length ? `: ${body.toString('utf8', 0, 200)}` : ''}`;
}

function encodeHttp(spec: RequestSpec, path: string, extra: Record<string, string>): HttpPrepared {
  const inputs = spec.inputs.map((t, i) => {
    const shm = spec.shm?.inputs[i];
    const parameters = shm
      ? { shared_memory_region: shm.region, shared_memory_offset: shm.offset, shared_memory_byte_size: shm.size }
      : { binary_data_size: t.bytes.length };
    return { name: t.name, shape: t.shape, datatype: t.datatype, parameters };
  });
  const outputs = spec.shm
    ? spec.shm.outputs.map((o) => ({ name: o.name, parameters: { shared_memory_region: o.region, shared_memory_byte_size: o.size } }))
    : spec.outputs.map((name) => ({ name, parameters: { binary_data: true } }));
  const header: Record<string, unknown> = { inputs, outputs };
  const binary = spec.shm ? Buffer.alloc(0) : Buffer.concat(spec.inputs.map((t) => t.bytes));
  const json = Buffer.from(JSON.stringify(header));
  const body = Buffer.concat([json, binary]);
  const headers = { ...extra, 'content-type': 'application/octet-stream', 'inference-header-content-length': String(json.length) };
  return { opts: { path, method: 'POST', headers, body }, path, header, binary, body, headers };
}

function withSequence(r: HttpPrepared, seq: SequenceStep): Buffer {
  const json = Buffer.from(JSON.stringify({ ...r.header, parameters: { sequence_id: seq.id, sequence_start: seq.start, sequence_end: seq.end } }));
  return Buffer.concat([json, r.binary]);
}
