import { isNereidError, toNereidError, type ErrorCode } from '../../errors.js';
import { modelConfigFromJson } from '../../config/index.js';
import type { InferenceRequest, InferenceResponse, Parameters, RequestTrace } from '../../inference/index.js';
import type { ResponseStream } from '../../inference/stream.js';
import { serializeBytes } from '../../tensor/bytes.js';
import type { DataType } from '../../tensor/datatype.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { CustomMetric, CustomMetricFamily, ModelCalls } from '../backend.js';
import { ERROR_CODE_NAMES, type BlsCall, type MetricCall, type ModelCall, type TensorDesc } from './wire.js';

type Send = (header: object, tail?: Uint8Array) => void;

/**
 * The stub's calls back into the server: BLS requests (pb_utils.InferenceRequest.exec / async_exec, streaming
 * for decoupled targets), load_model / unload_model / is_model_ready, and custom metrics. Tensors of BLS calls
 * travel in the frames' tails, both ways.
 */
export class StubCalls {
  private readonly streams = new Map<number, ResponseStream>();
  private readonly families: CustomMetricFamily[] = [];
  private readonly metrics: CustomMetric[] = [];

  constructor(
    private readonly calls: ModelCalls | undefined,
    /** The trace of a request the stub is executing, by its rid. */
    private readonly traceOf: (rid: number) => RequestTrace | undefined = () => undefined,
  ) {}

  handle(m: BlsCall | ModelCall | MetricCall | { t: 'bls-cancel'; call: number }, tail: Buffer | undefined, send: Send): void {
    switch (m.t) {
      case 'bls':
        return this.bls(m, tail, send);
      case 'bls-cancel':
        this.streams.get(m.call)?.cancelRequest();
        return;
      case 'model':
        return this.model(m, tail, send);
      case 'metric':
        return this.metric(m, send);
    }
  }

  private bls(m: BlsCall, tail: Buffer | undefined, send: Send): void {
    const calls = this.calls;
    if (!calls) return sendError(send, m.call, 'UNAVAILABLE', 'BLS requests are not available in this server');
    let request: InferenceRequest;
    try {
      request = blsRequest(m, tail);
      if (m.trace !== undefined) {
        const parent = this.traceOf(m.trace);
        if (parent !== undefined) request = { ...request, trace: parent.child() };
      }
    } catch (e) {
      return sendError(send, m.call, 'INVALID_ARG', toNereidError(e).message);
    }
    if (!m.stream) {
      calls.infer(request).then(
        (r) => sendResponse(send, m.call, r, true),
        (e: unknown) => sendFailure(send, m.call, e),
      );
      return;
    }
    const stream = calls.inferStream(request);
    this.streams.set(m.call, stream);
    void (async () => {
      try {
        // As Triton's: a FINAL flag sent alone reaches the caller as a last response with no outputs.
        let finalSent = false;
        for await (const r of stream) {
          finalSent = stream.drained;
          sendResponse(send, m.call, r, finalSent);
        }
        if (!finalSent) send({ t: 'bls-resp', call: m.call, final: true, outputs: [] });
      } catch (e) {
        sendFailure(send, m.call, e);
      } finally {
        this.streams.delete(m.call);
      }
    })();
  }

  private model(m: ModelCall, tail: Buffer | undefined, send: Send): void {
    const calls = this.calls;
    const reply = (p: Promise<unknown>): void => {
      p.then(
        (value) => send({ t: 'reply', call: m.call, ...(value !== undefined ? { value } : {}) }),
        (e: unknown) => send({ t: 'reply', call: m.call, error: toNereidError(e).message }),
      );
    };
    if (!calls) return reply(Promise.reject(new Error('model management is not available in this server')));
    switch (m.op) {
      case 'ready': {
        const version = m.version ? Number(m.version) : undefined;
        let ready = false;
        try {
          ready = calls.isModelReady(m.name, version);
        } catch {
          ready = false;
        }
        return reply(Promise.resolve(ready));
      }
      case 'unload':
        return reply(calls.unloadModel(m.name, { unloadDependents: m.unload_dependents ?? false }));
      case 'load':
        return reply((async () => {
          const config = m.config ? modelConfigFromJson(JSON.parse(m.config)) : undefined;
          const files = new Map<string, Uint8Array>();
          let at = 0;
          (m.files ?? []).forEach((name, i) => {
            const size = m.sizes?.[i] ?? 0;
            files.set(name.replace(/^file:/, ''), tail!.subarray(at, at + size));
            at += size;
          });
          await calls.loadModel(m.name, { ...(config ? { config } : {}), ...(files.size > 0 ? { files } : {}) });
        })());
    }
  }

  private metric(m: MetricCall, send: Send): void {
    const reply = (f: () => unknown): void => {
      let value: unknown;
      try {
        value = f();
      } catch (e) {
        if (m.call !== undefined) send({ t: 'reply', call: m.call, error: toNereidError(e).message });
        return;
      }
      if (m.call !== undefined) send({ t: 'reply', call: m.call, value });
    };
    const registry = this.calls?.metrics;
    reply(() => {
      if (!registry) throw new Error('custom metrics are not available: the server has metrics turned off');
      switch (m.op) {
        case 'family':
          this.families.push(registry.family(m.name!, m.description ?? '', (['counter', 'gauge', 'histogram'] as const)[m.kind!]!));
          return this.families.length - 1;
        case 'metric':
          this.metrics.push(this.families[m.family!]!.metric(m.labels ?? {}, m.buckets ?? undefined));
          return this.metrics.length - 1;
        case 'increment':
          return this.metrics[m.metric!]!.increment(m.value!);
        case 'set':
          return this.metrics[m.metric!]!.set(m.value!);
        case 'observe':
          return this.metrics[m.metric!]!.observe(m.value!);
        case 'value':
          return this.metrics[m.metric!]!.value();
      }
    });
  }

  /** The stub is gone: streams it was reading are cancelled, its metrics leave the endpoint. */
  close(): void {
    for (const s of this.streams.values()) void s.return();
    this.streams.clear();
    for (const m of this.metrics) m.delete();
    this.metrics.length = 0;
    this.families.length = 0;
  }
}

function blsRequest(m: BlsCall, tail: Buffer | undefined): InferenceRequest {
  const inputs = m.inputs.map((d) => tensorFrom(d, tail));
  const parameters = m.params && m.params !== '{}' ? (JSON.parse(m.params) as Parameters) : undefined;
  const corr = m.corr;
  const inSequence = corr !== 0 && corr !== '';
  return {
    model: m.model,
    ...(m.version >= 0 ? { version: m.version } : {}),
    id: m.id,
    inputs,
    ...(m.outputs.length > 0 ? { outputs: m.outputs.map((name) => ({ name })) } : {}),
    ...(parameters ? { parameters } : {}),
    ...(m.timeout > 0 ? { timeoutUs: m.timeout } : {}),
    ...(inSequence ? { sequenceId: corr, sequenceStart: (m.flags & 1) !== 0, sequenceEnd: (m.flags & 2) !== 0 } : {}),
  };
}

function tensorFrom(d: TensorDesc, tail: Buffer | undefined): Tensor {
  const bytes = tail ? tail.subarray(d.o, d.o + d.b) : Buffer.alloc(0);
  if (d.d === 'BYTES') return { name: d.n, datatype: 'BYTES', shape: d.s, data: splitElements(bytes, d.c ?? 0) };
  return { name: d.n, datatype: d.d as Exclude<DataType, 'BYTES'>, shape: d.s, data: bytes };
}

/** BYTES elements of a serialized tensor (4-byte LE length, bytes), as views. */
export function splitElements(bytes: Uint8Array, count: number): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = new Array(count);
  let at = 0;
  for (let i = 0; i < count; i++) {
    const len = view.getUint32(at, true);
    out[i] = bytes.subarray(at + 4, at + 4 + len);
    at += 4 + len;
  }
  return out;
}

function sendResponse(send: Send, call: number, r: InferenceResponse, final: boolean): void {
  const descs: TensorDesc[] = [];
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const t of r.outputs) {
    let data: Uint8Array;
    let count: number | null = null;
    if (t.datatype === 'BYTES') {
      data = serializeBytes(t.data);
      count = t.data.length;
    } else {
      data = t.data;
    }
    descs.push({ n: t.name, d: t.datatype, s: t.shape, o: at, b: data.byteLength, c: count });
    parts.push(data);
    at += data.byteLength;
  }
  const params = r.parameters ? JSON.stringify(r.parameters, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v)) : undefined;
  send({ t: 'bls-resp', call, final, outputs: descs, ...(params ? { params } : {}) }, parts.length > 0 ? Buffer.concat(parts, at) : undefined);
}

function sendFailure(send: Send, call: number, e: unknown): void {
  const err = toNereidError(e);
  sendError(send, call, isNereidError(e) ? err.code : 'INTERNAL', err.message);
}

function sendError(send: Send, call: number, code: ErrorCode, message: string): void {
  const index = (ERROR_CODE_NAMES as readonly string[]).indexOf(code);
  send({ t: 'bls-resp', call, final: true, error: { code: index >= 0 ? index : 1, message } });
}
