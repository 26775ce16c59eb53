import type { ServerResponse } from 'node:http';
import { isNereidError } from '../../errors.js';
import type { RootTrace } from '../../inference/index.js';
import type { InferenceServer, ResolvedModel } from '../../server/inference-server.js';
import { badRequest, OpenAiError } from './errors.js';
import { TEXT_INPUT, openAiModel, textInput } from './text-models.js';

/**
 * POST /v1/embeddings. An embedding model is one with a TYPE_STRING input `text_input` and a TYPE_FP32 output
 * `embedding` (the llama.cpp backend's models with parameter `embedding: "true"`); each input string is one
 * request to it, in order, and its response's parameter prompt_tokens makes the usage.
 */
export interface EmbeddingRequest {
  readonly model: string;
  readonly inputs: readonly string[];
  readonly base64: boolean;
  readonly dimensions: number | undefined;
}

export const EMBEDDING_OUTPUT = 'embedding';
/** OpenAI's own bound on the strings of one request. */
const MAX_INPUTS = 2048;
/** Characters one input may hold; a model's context refuses longer texts in tokens anyway. */
const MAX_INPUT_CHARS = 1 << 16;

type Body = Record<string, unknown>;

export function embeddingRequest(body: unknown): EmbeddingRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  const b = body as Body;
  const model = b['model'];
  if (typeof model !== 'string' || model === '') throw badRequest("'model' is required and must be a string", 'model');
  const format = b['encoding_format'] ?? 'float';
  if (format !== 'float' && format !== 'base64') throw badRequest("'encoding_format' must be 'float' or 'base64'", 'encoding_format');
  const dimensions = b['dimensions'] ?? undefined;
  if (dimensions !== undefined && (typeof dimensions !== 'number' || !Number.isInteger(dimensions) || dimensions < 1)) {
    throw badRequest("'dimensions' must be a positive integer", 'dimensions');
  }
  if (b['user'] !== undefined && b['user'] !== null && typeof b['user'] !== 'string') throw badRequest("'user' must be a string", 'user');
  return { model, inputs: inputsOf(b['input']), base64: format === 'base64', dimensions };
}

function inputsOf(input: unknown): string[] {
  const list = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(list) || list.length === 0) throw badRequest("'input' must be a string or a non-empty list of strings", 'input');
  if (list.length > MAX_INPUTS) throw badRequest(`'input' holds ${list.length} items; at most ${MAX_INPUTS} are accepted`, 'input');
  for (const s of list) {
    if (typeof s !== 'string') throw badRequest("'input' as token ids is not supported: send strings", 'input');
    if (s === '') throw badRequest("'input' must not hold an empty string", 'input');
    if (s.length > MAX_INPUT_CHARS) throw badRequest(`an 'input' string holds ${s.length} characters; at most ${MAX_INPUT_CHARS} are accepted`, 'input');
  }
  return list as string[];
}

export async function handleEmbeddings(server: InferenceServer, request: EmbeddingRequest, res: ServerResponse, signal: AbortSignal, trace?: RootTrace, tenant?: string): Promise<void> {
  const model = embeddingModel(server, request.model);
  const data: string[] = [];
  let tokens = 0;
  for (let index = 0; index < request.inputs.length; index++) {
    const r = await server.infer({
      model: request.model, inputs: [textInput(model, request.inputs[index]!)], outputs: [{ name: EMBEDDING_OUTPUT }], signal, trace, tenant,
    }, model).catch((e: unknown) => {
      throw contextError(e, index) ?? e;
    });
    const out = r.outputs.find((o) => o.name === EMBEDDING_OUTPUT);
    if (out === undefined || out.datatype !== 'FP32') throw new OpenAiError('INTERNAL', `model '${request.model}' answered no '${EMBEDDING_OUTPUT}' vector`);
    checkDimensions(request, out.data.byteLength / 4);
    const count = r.parameters?.['prompt_tokens'];
    if (typeof count === 'number') tokens += count;
    data.push(`{"object":"embedding","index":${index},"embedding":${request.base64 ? JSON.stringify(Buffer.from(out.data.buffer, out.data.byteOffset, out.data.byteLength).toString('base64')) : floats(out.data)}}`);
  }
  const body = `{"object":"list","data":[${data.join(',')}],"model":${JSON.stringify(request.model)},"usage":{"prompt_tokens":${tokens},"total_tokens":${tokens}}}`;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

/** The model, if it is a ready embedding model; OpenAI's 404 for no such model, 400 for a model of another kind. */
function embeddingModel(server: InferenceServer, name: string): ResolvedModel {
  const model = openAiModel(server, name);
  if (model.inputs.get(TEXT_INPUT)?.datatype !== 'BYTES' || model.outputs.get(EMBEDDING_OUTPUT)?.datatype !== 'FP32') {
    throw badRequest(`model '${name}' is not an embedding model: it needs a TYPE_STRING input '${TEXT_INPUT}' and a TYPE_FP32 output '${EMBEDDING_OUTPUT}'`, 'model');
  }
  return model;
}

/** `dimensions` asks for shortened vectors, which only a model trained for it can give: only the model's own size is accepted. */
function checkDimensions(request: EmbeddingRequest, size: number): void {
  if (request.dimensions !== undefined && request.dimensions !== size) {
    throw badRequest(`'dimensions' is not supported: this model's vectors have ${size} dimensions`, 'dimensions');
  }
}

function floats(bytes: Uint8Array): string {
  const v = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(v.buffer).set(bytes);
  return JSON.stringify(Array.from(v));
}

/** A text past the model's context as OpenAI answers it, naming the input. */
function contextError(e: unknown, index: number): OpenAiError | undefined {
  if (!isNereidError(e) || e.code !== 'CONTEXT_LENGTH_EXCEEDED') return undefined;
  return new OpenAiError('INVALID_ARG', `input ${index}: ${e.message}`, 'input', 'context_length_exceeded');
}
