/**
 * A worker thread hosting instances of JavaScript models, of one model or several (see pool.ts). For each
 * instance it imports the model file as a module of its own (the same file imported by two instances gives two
 * modules, so module-level state stays per instance), creates the model object and runs initialize / execute /
 * finalize as the server asks, one execution per instance at a time. A model object lives until its instance is
 * finalized or the worker stops, so state it keeps between executions (a sequence's running total, say) stays.
 * 'autocomplete' loads only run the model class's static autoComplete.
 *
 * Every call into a model runs inside its instance's async context, so `getModelDir()` and `Logger` in
 * nereid/backend-utils answer for the calling instance, also after an await.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { register } from 'node:module';
import { basename, dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import * as utils from './utils.js';
import { resolvesToOwnUtils } from './pool.js';
import { bytesElements, fixedBytes, pack, type FromWorker, type InstanceInit, type PlainTensor, type ToWorker, type WireRequest } from './wire.js';

interface ModelObject {
  initialize?(args: Record<string, string>): unknown;
  execute(requests: utils.InferenceRequest[]): unknown;
  finalize?(): unknown;
}

type ModelClass = (new () => ModelObject) & { autoComplete?(config: utils.ModelConfig): unknown };

const port = parentPort!;
const FINAL = utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL;

const post = (m: FromWorker, transfer?: ArrayBuffer[]): void => port.postMessage(m, transfer);

/** One hosted instance: its model object and the requests it has not answered yet. */
interface Hosted {
  readonly iid: number;
  readonly init: InstanceInit;
  model: ModelObject | undefined;
  readonly channels: Map<number, Channel>;
  readonly modelDir: string;
  log(level: number, message: string): void;
}

const hosted = new Map<number, Hosted>();
const current = new AsyncLocalStorage<Hosted>();
(utils.getModelDir as unknown as Record<symbol, (get: () => Hosted | undefined) => void>)[Symbol.for('nereid.backend.setInstanceContext')]!(
  () => current.getStore(),
);

/** An exception as the client reads it: `Error: …`, `TritonModelException: …`, `TypeError: …`. */
const describe = (e: unknown): string => String(e);

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

let hooksRegistered = false;

/** Makes `nereid/backend-utils` resolve to this server's utils module from any model file (loader-hooks.ts). */
function registerHooks(): void {
  if (hooksRegistered) return;
  register(new URL('./loader-hooks.js', import.meta.url));
  hooksRegistered = true;
}

async function loadClass(h: Hosted): Promise<ModelClass> {
  if (!resolvesToOwnUtils(dirname(h.init.modelFile))) registerHooks();
  // The query makes each instance's import a module of its own; files the model imports are shared.
  const mod = (await import(`${pathToFileURL(h.init.modelFile).href}?instance=${h.iid}`)) as Record<string, unknown>;
  const cls = [mod.default, mod.Model, mod.TritonPythonModel].find((c) => typeof c === 'function');
  if (!cls) {
    throw new Error(`${basename(h.init.modelFile)} exports no model class: write \`export default class …\` (or \`export class Model …\`)`);
  }
  return cls as ModelClass;
}

/** One request's way back: the state of its response sender. */
class Channel implements utils.RequestChannel {
  closed = false;
  cancelled = false;
  /** Not decoupled: a response sent without FINAL waits here for the flag. */
  private held: utils.InferenceResponse | undefined;

  constructor(private readonly h: Hosted, readonly rid: number, private readonly requested: ReadonlySet<string>) {}

  send(response: utils.InferenceResponse | undefined, flags: number): void {
    if (this.closed) throw new utils.TritonModelException('Unable to send response. Response sender has been closed.');
    const final = (flags & FINAL) !== 0;
    if (!this.h.init.decoupled) {
      // Triton's python_backend response sender, word for word: the JavaScript backend offers the same API.
      if (this.held && response) throw new utils.TritonModelException('Unable to send response. Non-decoupled model cannot send more than one response.');
      if (!final) {
        if (!response) throw new utils.TritonModelException(NO_RESPONSE);
        this.held = response;
        return;
      }
      if (!response && !this.held) throw new utils.TritonModelException('Unable to send response. Non-decoupled model cannot send complete final before sending a response.');
      response ??= this.held!;
      this.held = undefined;
      this.close();
      postResponse(this, response, true);
      return;
    }
    if (!response && !final) throw new utils.TritonModelException(NO_RESPONSE);
    if (final) this.close();
    if (!response) post({ t: 'resp', iid: this.h.iid, rid: this.rid, final: true });
    else postResponse(this, response, final);
  }

  isCancelled(): boolean {
    return this.cancelled;
  }

  /** Not decoupled: sends a response still waiting for its FINAL flag, as execute() has returned. */
  flush(): void {
    if (this.held && !this.closed) this.send(undefined, FINAL);
  }

  close(): void {
    this.closed = true;
    this.h.channels.delete(this.rid);
  }

  wants(name: string): boolean {
    return this.requested.has(name);
  }

  get iid(): number {
    return this.h.iid;
  }
}

/** Triton's words for a flags-0 send without a response. */
const NO_RESPONSE = 'Inference Response object must be provided when the response flags is set to zero.';

/** A value's type as a message names it: its class, or its typeof. */
function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'object';
  return typeof v;
}

function postError(h: Hosted, rid: number, code: number, message: string): void {
  post({ t: 'resp', iid: h.iid, rid, final: true, error: { code, message } });
}

function postResponse(ch: Channel, response: utils.InferenceResponse, final: boolean): void {
  const error = response.error();
  if (error) {
    // An error ends the request: the server answers it with this error and forgets it.
    ch.close();
    post({ t: 'resp', iid: ch.iid, rid: ch.rid, final: true, error: { code: error.code(), message: error.message() } });
    return;
  }
  const plain: PlainTensor[] = [];
  for (const t of response.outputTensors()) {
    if (!utils.isTensor(t)) throw new utils.TritonModelException('an InferenceResponse holds something that is not a Tensor');
    // Outputs the request did not ask for are left out, as Triton prunes them.
    if (!ch.wants(t.name())) continue;
    const data = t.asArray();
    plain.push({
      name: t.name(), datatype: t.datatype(), shape: t.shape(),
      data: Array.isArray(data) ? data : new Uint8Array((data as utils.TypedArray).buffer, (data as utils.TypedArray).byteOffset, (data as utils.TypedArray).byteLength),
    });
  }
  const packed = pack([plain]);
  const params = response.parametersObject();
  post(
    { t: 'resp', iid: ch.iid, rid: ch.rid, final, outputs: packed.groups[0], buffer: packed.buffer, ...(Object.keys(params).length > 0 ? { parameters: params } : {}) },
    [packed.buffer],
  );
}

function toRequest(h: Hosted, w: WireRequest, buffer: ArrayBuffer): { request: utils.InferenceRequest; channel: Channel } {
  const inputs = w.inputs.map((t) =>
    t.datatype === 'BYTES'
      ? new utils.Tensor(t.name, bytesElements(buffer, t), t.shape, 'BYTES')
      : new utils.Tensor(t.name, fixedBytes(buffer, t), t.shape, t.datatype as utils.DataType),
  );
  const request = new utils.InferenceRequest({
    requestId: w.id, correlationId: w.correlationId, inputs, requestedOutputNames: w.outputs, modelName: h.init.modelName,
    flags: w.flags, timeout: w.timeoutUs, ...(w.parameters ? { parameters: w.parameters } : {}),
  });
  const channel = new Channel(h, w.rid, new Set(w.outputs));
  h.channels.set(w.rid, channel);
  request[utils.kRequestChannel] = channel;
  return { request, channel };
}

async function execute(h: Hosted, model: ModelObject, m: Extract<ToWorker, { t: 'exec' }>): Promise<void> {
  const { init } = h;
  const start = process.hrtime.bigint();
  const made = m.requests.map((w) => toRequest(h, w, m.buffer));
  const requests = made.map((x) => x.request);
  let error: string | undefined;
  const failed = (why: string): string => `Failed to process the request(s) for model '${init.modelName}', message: ${why}`;
  try {
    let result = model.execute(requests);
    if (isThenable(result)) result = await result;
    if (init.decoupled) {
      if (result !== undefined && result !== null) {
        error = failed(`JavaScript model '${init.modelName}' is using the decoupled mode and the execute function must return None (undefined): responses go through each request's response sender.`);
      }
    } else if (!Array.isArray(result)) {
      error = failed(`Expected a list in the execute return, found type '${typeName(result)}'.`);
    } else if (result.length !== requests.length) {
      error = failed(`Number of InferenceResponse objects do not match the number of InferenceRequest objects. InferenceRequest(s) size is:${requests.length}, and InferenceResponse(s) size is:${result.length}`);
    } else {
      result.forEach((r: unknown, i) => {
        const ch = made[i]!.channel;
        if (r === undefined || r === null) return; // answered through the sender, or reported as unanswered below
        if (ch.closed) {
          // As the Python backend: only this request's answer is at stake, and it has been given.
          h.log(utils.Logger.ERROR, failed('Unable to send response. Non-decoupled model cannot send more than one response.'));
          return;
        }
        if (!utils.isInferenceResponse(r)) {
          ch.close();
          postError(h, ch.rid, utils.TritonError.INTERNAL, failed(`Expected an 'InferenceResponse' object in the execute function return list, found type '${typeName(r)}'.`));
          return;
        }
        try {
          ch.send(r, FINAL);
        } catch (e) {
          if (!ch.closed) ch.close();
          postError(h, ch.rid, utils.TritonError.INTERNAL, failed(describe(e)));
        }
      });
    }
  } catch (e) {
    error = failed(describe(e));
  }
  const inferNs = Number(process.hrtime.bigint() - start);
  // Requests left without an answer: on an error all of them; otherwise, for models that are not decoupled,
  // those execute() neither answered nor sent. Decoupled requests stay open for their senders.
  const unanswered: number[] = [];
  for (const { channel } of made) {
    if (!error && !init.decoupled) channel.flush();
    if (channel.closed || (init.decoupled && !error)) continue;
    channel.close();
    unanswered.push(channel.rid);
  }
  post({ t: 'done', iid: h.iid, batch: m.batch, inferNs, ...(error !== undefined ? { error } : {}), ...(unanswered.length > 0 ? { unanswered } : {}) });
}

async function loadInstance(h: Hosted): Promise<void> {
  try {
    const Cls = await loadClass(h);
    const model = new Cls();
    if (typeof model.execute !== 'function') throw new Error('the model class has no execute(requests) method');
    if (typeof model.initialize === 'function') {
      const r = model.initialize({ ...h.init.args });
      if (isThenable(r)) await r;
    }
    h.model = model;
  } catch (e) {
    hosted.delete(h.iid);
    post({ t: 'init-error', iid: h.iid, message: describe(e) });
    return;
  }
  post({ t: 'ready', iid: h.iid });
}

async function finalize(h: Hosted): Promise<void> {
  let error: string | undefined;
  try {
    if (typeof h.model?.finalize === 'function') {
      const r = h.model.finalize();
      if (isThenable(r)) await r;
    }
  } catch (e) {
    error = describe(e);
  }
  hosted.delete(h.iid);
  h.model = undefined;
  // The model's memory goes back now, before the server hears it is unloaded: left to this worker's next
  // collection, it could be freed while another model loads and taken off that load's measured growth (what a
  // memory budget counts).
  collectGarbage();
  post({ t: 'finalized', iid: h.iid, ...(error !== undefined ? { error } : {}) });
}

let gc: (() => void) | undefined;

/** A full collection of this worker's heap (V8's gc, made available to a context of our own). */
function collectGarbage(): void {
  if (gc === undefined) {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    gc = typeof fn === 'function' ? (fn as () => void) : () => undefined;
  }
  gc();
}

async function autoComplete(h: Hosted): Promise<void> {
  try {
    const Cls = await loadClass(h);
    if (typeof Cls.autoComplete !== 'function') {
      post({ t: 'autocomplete', iid: h.iid });
      return;
    }
    let r = Cls.autoComplete(new utils.ModelConfig(h.init.config ?? '{}'));
    if (isThenable(r)) r = await r;
    if (typeof r !== 'object' || r === null || typeof (r as utils.ModelConfig).asDict !== 'function') {
      throw new Error('autoComplete(config) must return the ModelConfig it was given');
    }
    post({ t: 'autocomplete', iid: h.iid, config: JSON.stringify((r as utils.ModelConfig).asDict()) });
  } catch (e) {
    post({ t: 'autocomplete', iid: h.iid, error: describe(e) });
  } finally {
    hosted.delete(h.iid);
  }
}

function host(iid: number, init: InstanceInit): Hosted {
  const h: Hosted = {
    iid, init, model: undefined, channels: new Map(), modelDir: init.modelDir,
    log: (level, message) => post({ t: 'log', iid, level, message }),
  };
  hosted.set(iid, h);
  return h;
}

port.on('message', (m: ToWorker) => {
  if (m.t === 'hooks') return registerHooks();
  if (m.t === 'load') {
    const h = host(m.iid, m.init);
    void current.run(h, () => (m.init.mode === 'autocomplete' ? autoComplete(h) : loadInstance(h)));
    return;
  }
  const h = hosted.get(m.iid);
  if (!h) return;
  switch (m.t) {
    case 'exec':
      if (h.model) void current.run(h, () => execute(h, h.model!, m));
      return;
    case 'cancel': {
      const ch = h.channels.get(m.rid);
      if (ch) ch.cancelled = true;
      return;
    }
    case 'finalize':
      void current.run(h, () => finalize(h));
      return;
    case 'drop':
      hosted.delete(h.iid);
      return;
  }
});
