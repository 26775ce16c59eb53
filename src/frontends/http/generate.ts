import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RootTrace } from '../../inference/trace.js';
import { invalidArg, isNereidError, NereidError } from '../../errors.js';
import type { InferenceRequest, InferenceResponse } from '../../inference/index.js';
import type { InferenceServer, ResolvedModel } from '../../server/inference-server.js';
import type { DataType } from '../../tensor/datatype.js';
import { elementCount, type Tensor } from '../../tensor/tensor.js';
import { readBody } from './body.js';
import { decodeParameters, isObject } from './infer-request.js';
import { encodeParameters, jsonData } from './infer-response.js';
import { decodeJsonData } from './json-data.js';
import { firstRepeatedKey } from './json-repeated-key.js';
import { HTTP_STATUS } from './status.js';
import { TextPieces } from './text-pieces.js';

/**
 * Triton's generate extension: POST …/generate answers one flat JSON object, …/generate_stream one server-sent
 * event per response. A request is a flat JSON object: every key (top level or inside `parameters`) named like
 * a model input becomes that input, with the shape taken from the model; every other key is a request
 * parameter. Outputs come back by name, a one-element tensor as a bare value. Decoupled models are allowed
 * on both paths.
 */
export async function handleGenerate(server: InferenceServer, model: string, version: number | undefined, stream: boolean,
  req: IncomingMessage, res: ServerResponse, maxInputSize: number, signal: AbortSignal, parseBody: (body: Buffer, exact: boolean) => Promise<unknown>,
  trace: RootTrace | null = null, tenant?: string): Promise<void> {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') throw invalidArg(`Unsupported content-encoding, only 'identity' is supported. (got '${String(encoding)}')`);
  const body = await readBody(req, maxInputSize);
  // Exact: INT64 / UINT64 inputs and sequence ids past 2^53 are read as written, as infer reads them.
  const json = await parseBody(body, true);
  const found = server.resolveLoaded(model, version, { signal });
  const resolved = found instanceof Promise ? await found : found;
  const repeated = firstRepeatedKey(body, (k, inParameters) => resolved.inputs.has(k) && (inParameters || (k !== 'parameters' && k !== 'id')));
  if (repeated !== undefined) throw invalidArg(`input '${repeated}' already exists in request`);
  if (trace !== null) trace.stamp('HTTP_RECV_END', process.hrtime.bigint());
  const request = { ...generateRequest(resolved, model, version, json, signal), tenant };
  const responses = server.inferStream(trace === null ? request : { ...request, trace }, resolved);
  // A request refused before the model saw it is an ordinary error reply. On generate_stream an error the model
  // answers first is an event, under that error's status, as Triton sends it.
  const first = await responses.next().catch((e: unknown) => {
    if (!stream || responses.refused || !isNereidError(e)) throw e;
    return e;
  });
  if (isNereidError(first)) return streamFirstError(res, first);
  if (stream) return streamEvents(res, first, responses);
  if (first.done) throw new NereidError('INTERNAL', `model '${model}' sent no response`);
  const text = generateJson(await wholeResponse(model, first.value, responses));
  if (trace !== null) trace.stamp('INFER_RESPONSE_COMPLETE', process.hrtime.bigint());
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The one response generate answers: the model's only one, or the pieces of a streaming text model (an LLM
 * engine that streams whatever the request asks) joined into one. Several responses that are not text are
 * refused, as Triton refuses them; an error after the first response is the request's error.
 */
async function wholeResponse(model: string, first: InferenceResponse, responses: AsyncIterableIterator<InferenceResponse>): Promise<InferenceResponse> {
  let joined: TextPieces | null | undefined;
  for (let r = await responses.next(); !r.done; r = await responses.next()) {
    joined ??= TextPieces.of(first);
    if (joined === null || !joined.add(r.value)) {
      void responses.return?.();
      throw invalidArg(`generate expects exactly one response from model '${model}', which sent more; use generate_stream`);
    }
  }
  return joined?.whole() ?? first;
}

async function streamEvents(res: ServerResponse, first: IteratorResult<InferenceResponse>, responses: AsyncIterableIterator<InferenceResponse>): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
  // A client that leaves stops the request: the model sees it as cancelled.
  const stop = (): void => void responses.return?.();
  res.once('close', stop);
  try {
    if (!first.done) res.write(`data: ${generateJson(first.value)}\n\n`);
    for (let r = first; !r.done;) {
      r = await responses.next();
      if (!r.done) res.write(`data: ${generateJson(r.value)}\n\n`);
    }
  } catch (e) {
    const message = isNereidError(e) ? e.message : 'internal error';
    res.write(`data: ${JSON.stringify({ error: message })}\n\n`);
  } finally {
    res.off('close', stop);
    res.end();
  }
}

function streamFirstError(res: ServerResponse, e: NereidError): void {
  res.writeHead(HTTP_STATUS[e.code], { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache' });
  res.end(`data: ${JSON.stringify({ error: e.message })}\n\n`);
}

/** The flat JSON request → an InferenceRequest, inputs shaped by the model's. */
function generateRequest(resolved: ResolvedModel, model: string, version: number | undefined, json: unknown, signal: AbortSignal): InferenceRequest {
  if (!isObject(json)) throw invalidArg('the generate request must be a JSON object');
  const batched = resolved.maxBatchSize > 0;
  const inputs: Tensor[] = [];
  const params: Record<string, unknown> = {};
  const nested = json['parameters'];
  if (nested !== undefined && !isObject(nested)) throw invalidArg("Expected JSON object for keyword: 'parameters'");
  const entries = [...Object.entries(nested ?? {}), ...Object.entries(json).filter(([k]) => k !== 'parameters' && k !== 'id')];
  for (const [k, v] of entries) {
    const m = resolved.inputs.get(k);
    if (m) inputs.push(inputTensor(k, m.datatype, m.shape, batched, v));
    else params[k] = v;
  }
  const id = json['id'];
  if (id !== undefined && typeof id !== 'string') throw invalidArg("Unable to parse 'id': it must be a string");
  const p = decodeParameters(params);
  return {
    model, version, id: id ?? '', inputs, parameters: p.custom, priority: p.priority, timeoutUs: p.timeoutUs,
    sequenceId: p.sequenceId, sequenceStart: p.sequenceStart, sequenceEnd: p.sequenceEnd, signal,
  };
}

/**
 * One JSON value as an input: a scalar is one element, an array its elements. The shape is the model's with a
 * batch of 1, and its first variable dimension takes whatever count the value has.
 */
function inputTensor(name: string, datatype: DataType, modelShape: readonly number[], batched: boolean, value: unknown): Tensor {
  const values = Array.isArray(value) ? value : [value];
  const shape = batched ? [1, ...modelShape.slice(1)] : [...modelShape];
  const known = shape.reduce((n, d) => (d >= 0 ? n * d : n), 1);
  const free = shape.indexOf(-1);
  if (free >= 0) {
    shape[free] = known === 0 ? 0 : values.length / known;
    for (let i = free + 1; i < shape.length; i++) if (shape[i] === -1) shape[i] = 1;
  }
  const count = elementCount(shape);
  if (!Number.isInteger(count) || count !== values.length) {
    throw invalidArg(`The schema can not convert input '${name}' to tensor with proper shape: ${values.length} value(s) do not fit its shape [${modelShape.join(',')}]`);
  }
  const data = decodeJsonData(name, datatype, values, count);
  return { name, datatype, shape, data } as Tensor;
}

/** A response as generate writes it: id, model, version, parameters and outputs as flat keys. */
export function generateJson(r: InferenceResponse): string {
  let s = r.id ? `{"id":${JSON.stringify(r.id)},` : '{';
  s += `"model_name":${JSON.stringify(r.model)},"model_version":"${r.version}"`;
  if (r.parameters && Object.keys(r.parameters).length > 0) s += `,${encodeParameters(r.parameters).slice(1, -1)}`;
  for (const t of r.outputs) {
    const data = jsonData(t);
    s += `,${JSON.stringify(t.name)}:${elementCount(t.shape) === 1 ? data.slice(1, -1) : data}`;
  }
  return `${s}}`;
}
