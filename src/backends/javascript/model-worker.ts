/**
 * The worker thread behind one instance of a JavaScript model (or, in 'autocomplete' mode, the short-lived
 * worker that runs the model class's static autoComplete). It imports the model file, creates the model
 * object, and runs initialize / execute / finalize as the server asks, one execution at a time. The model
 * object lives as long as the worker, so state it keeps between executions stays (a sequence's running
 * total, say) until the instance is unloaded or its worker crashes.
 */
import { createRequire, register } from 'node:module';
import { basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import * as utils from './utils.js';
import { bytesElements, fixedBytes, pack, type FromWorker, type PlainTensor, type ToWorker, type WireRequest } from './wire.js';

export interface WorkerInit {
  readonly mode: 'instance' | 'autocomplete';
  readonly modelFile: string;
  readonly modelDir: string;
  readonly modelName: string;
  readonly decoupled: boolean;
  /** initialize()'s argument: Triton's keys, string values. */
  readonly args: Readonly<Record<string, string>>;
  /** autocomplete: the config in its JSON form. */
  readonly config?: string;
}

interface ModelObject {
  initialize?(args: Record<string, string>): unknown;
  execute(requests: utils.InferenceRequest[]): unknown;
  finalize?(): unknown;
}

type ModelClass = (new () => ModelObject) & { autoComplete?(config: utils.ModelConfig): unknown };

const port = parentPort!;
const init = workerData as WorkerInit;
const FINAL = utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL;

const post = (m: FromWorker, transfer?: ArrayBuffer[]): void => port.postMessage(m, transfer);

(utils.Logger as unknown as Record<symbol, (sink: (level: number, message: string) => void) => void>)[Symbol.for('nereid.backend.setLogSink')]!(
  (level, message) => post({ t: 'log', level, message }),
);
(utils.getModelDir as unknown as Record<symbol, (dir: string) => void>)[Symbol.for('nereid.backend.setModelDir')]!(init.modelDir);

/** An exception as the client reads it: `Error: …`, `TritonModelException: …`, `TypeError: …`. */
const describe = (e: unknown): string => String(e);

const isThenable = (v: unknown): v is PromiseLike<unknown> => typeof v === 'object' && v !== null && typeof (v as { then?: unknown }).then === 'function';

async function loadClass(): Promise<ModelClass> {
  if (!resolvesToOwnUtils(init.modelFile)) register(new URL('./loader-hooks.js', import.meta.url));
  const mod = (await import(pathToFileURL(init.modelFile).href)) as Record<string, unknown>;
  const cls = [mod.default, mod.Model, mod.TritonPythonModel].find((c) => typeof c === 'function');
  if (!cls) {
    throw new Error(`${basename(init.modelFile)} exports no model class: write \`export default class …\` (or \`export class Model …\`)`);
  }
  return cls as ModelClass;
}

/**
 * Whether `nereid/backend-utils` already resolves, from the model file, to this server's utils module: a
 * repository inside the package (the bundled examples; a package may import itself by name) or below a
 * node_modules holding this very copy. Then no hooks are needed, and none are registered: in Node 20 each
 * worker's hooks run on a thread of their own, which cost 40-90 ms and several MiB per worker at startup.
 */
function resolvesToOwnUtils(modelFile: string): boolean {
  try {
    return createRequire(modelFile).resolve('nereid/backend-utils') === fileURLToPath(new URL('./utils.js', import.meta.url));
  } catch {
    return false;
  }
}

/** One request's way back: the state of its response sender. */
class Channel implements utils.RequestChannel {
  closed = false;
  cancelled = false;
  /** Not decoupled: a response sent without FINAL waits here for the flag. */
  private held: utils.InferenceResponse | undefined;

  constructor(readonly rid: number, private readonly requested: ReadonlySet<string>) {}

  send(response: utils.InferenceResponse | undefined, flags: number): void {
    if (this.closed) throw new utils.TritonModelException('Unable to send response. Response sender has been closed.');
    const final = (flags & FINAL) !== 0;
    if (!init.decoupled) {
      if (this.held && response) throw new utils.TritonModelException('a model that is not decoupled sends exactly one response per request');
      if (!final) {
        if (!response) throw new utils.TritonModelException('send() without a response needs the TRITONSERVER_RESPONSE_COMPLETE_FINAL flag');
        this.held = response;
        return;
      }
      response ??= this.held;
      this.held = undefined;
      this.close();
      if (!response) postError(this.rid, utils.TritonError.INTERNAL, `model '${init.modelName}' ended a request without a response`);
      else postResponse(this, response, true);
      return;
    }
    if (!response && !final) throw new utils.TritonModelException('send() without a response needs the TRITONSERVER_RESPONSE_COMPLETE_FINAL flag');
    if (final) this.close();
    if (!response) post({ t: 'resp', rid: this.rid, final: true });
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
    channels.delete(this.rid);
  }

  wants(name: string): boolean {
    return this.requested.has(name);
  }
}

const channels = new Map<number, Channel>();

function postError(rid: number, code: number, message: string): void {
  post({ t: 'resp', rid, final: true, error: { code, message } });
}

function postResponse(ch: Channel, response: utils.InferenceResponse, final: boolean): void {
  const error = response.error();
  if (error) {
    // An error ends the request: the server answers it with this error and forgets it.
    ch.close();
    postError(ch.rid, error.code(), error.message());
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
    { t: 'resp', rid: ch.rid, final, outputs: packed.groups[0], buffer: packed.buffer, ...(Object.keys(params).length > 0 ? { parameters: params } : {}) },
    [packed.buffer],
  );
}

function toRequest(w: WireRequest, buffer: ArrayBuffer): { request: utils.InferenceRequest; channel: Channel } {
  const inputs = w.inputs.map((t) =>
    t.datatype === 'BYTES'
      ? new utils.Tensor(t.name, bytesElements(buffer, t), t.shape, 'BYTES')
      : new utils.Tensor(t.name, fixedBytes(buffer, t), t.shape, t.datatype as utils.DataType),
  );
  const request = new utils.InferenceRequest({
    requestId: w.id, correlationId: w.correlationId, inputs, requestedOutputNames: w.outputs, modelName: init.modelName,
    flags: w.flags, timeout: w.timeoutUs, ...(w.parameters ? { parameters: w.parameters } : {}),
  });
  const channel = new Channel(w.rid, new Set(w.outputs));
  channels.set(w.rid, channel);
  request[utils.kRequestChannel] = channel;
  return { request, channel };
}

async function execute(model: ModelObject, m: Extract<ToWorker, { t: 'exec' }>): Promise<void> {
  const start = process.hrtime.bigint();
  const made = m.requests.map((w) => toRequest(w, m.buffer));
  const requests = made.map((x) => x.request);
  let error: string | undefined;
  const failed = (why: string): string => `Failed to process the request(s) for model '${init.modelName}', message: ${why}`;
  try {
    let result = model.execute(requests);
    if (isThenable(result)) result = await result;
    if (init.decoupled) {
      if (result !== undefined && result !== null) {
        error = failed('a decoupled model\'s execute() must return nothing and send responses through each request\'s response sender');
      }
    } else if (!Array.isArray(result)) {
      error = failed('Expected a list in the execute return');
    } else if (result.length !== requests.length) {
      error = failed(`Number of InferenceResponse objects do not match the number of requests. InferenceRequest(s) size is ${requests.length}, and InferenceResponse(s) size is ${result.length}`);
    } else {
      result.forEach((r: unknown, i) => {
        const ch = made[i]!.channel;
        if (r === undefined || r === null) return; // answered through the sender, or reported as unanswered below
        if (ch.closed) {
          post({ t: 'log', level: utils.Logger.ERROR, message: `model '${init.modelName}': execute() returned a response for a request already answered through its sender; it is dropped` });
          return;
        }
        if (!utils.isInferenceResponse(r)) {
          ch.close();
          postError(ch.rid, utils.TritonError.INTERNAL, failed('execute() must return an InferenceResponse for each request'));
          return;
        }
        try {
          ch.send(r, FINAL);
        } catch (e) {
          if (!ch.closed) ch.close();
          postError(ch.rid, utils.TritonError.INTERNAL, failed(describe(e)));
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
  post({ t: 'done', batch: m.batch, inferNs, ...(error !== undefined ? { error } : {}), ...(unanswered.length > 0 ? { unanswered } : {}) });
}

async function runInstance(): Promise<void> {
  let model: ModelObject;
  try {
    const Cls = await loadClass();
    model = new Cls();
    if (typeof model.execute !== 'function') throw new Error('the model class has no execute(requests) method');
    if (typeof model.initialize === 'function') {
      const r = model.initialize({ ...init.args });
      if (isThenable(r)) await r;
    }
  } catch (e) {
    post({ t: 'init-error', message: describe(e) });
    return;
  }
  port.on('message', (m: ToWorker) => {
    switch (m.t) {
      case 'exec':
        void execute(model, m);
        return;
      case 'cancel': {
        const ch = channels.get(m.rid);
        if (ch) ch.cancelled = true;
        return;
      }
      case 'finalize':
        void (async () => {
          let error: string | undefined;
          try {
            if (typeof model.finalize === 'function') {
              const r = model.finalize();
              if (isThenable(r)) await r;
            }
          } catch (e) {
            error = describe(e);
          }
          post({ t: 'finalized', ...(error !== undefined ? { error } : {}) });
        })();
        return;
    }
  });
  post({ t: 'ready' });
}

async function runAutoComplete(): Promise<void> {
  try {
    const Cls = await loadClass();
    if (typeof Cls.autoComplete !== 'function') {
      post({ t: 'autocomplete' });
      return;
    }
    let r = Cls.autoComplete(new utils.ModelConfig(init.config ?? '{}'));
    if (isThenable(r)) r = await r;
    if (typeof r !== 'object' || r === null || typeof (r as utils.ModelConfig).asDict !== 'function') {
      throw new Error('autoComplete(config) must return the ModelConfig it was given');
    }
    post({ t: 'autocomplete', config: JSON.stringify((r as utils.ModelConfig).asDict()) });
  } catch (e) {
    post({ t: 'autocomplete', error: describe(e) });
  }
}

await (init.mode === 'autocomplete' ? runAutoComplete() : runInstance());
