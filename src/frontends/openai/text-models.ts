import { isNereidError } from '../../errors.js';
import type { InferenceServer, ResolvedModel } from '../../server/inference-server.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { InferenceResponse } from '../../inference/index.js';
import { badRequest, modelNotFound } from './errors.js';

/**
 * Which models the OpenAI API serves: text models in the shape of Triton's LLM models, with a string input
 * `text_input` and a string output `text_output`, whatever their backend (in-process llama.cpp, a gateway to
 * another engine, a Python or JavaScript model).
 */
export const TEXT_INPUT = 'text_input';
export const TEXT_OUTPUT = 'text_output';

export function isTextModel(model: ResolvedModel): boolean {
  return model.inputs.get(TEXT_INPUT)?.datatype === 'BYTES' && model.outputs.get(TEXT_OUTPUT)?.datatype === 'BYTES';
}

/** The ready text models, by name. */
export async function textModels(server: InferenceServer): Promise<string[]> {
  const names: string[] = [];
  for (const entry of await server.repositoryIndex(true)) {
    try {
      if (isTextModel(server.resolveModel(entry.name))) names.push(entry.name);
    } catch {
      // unloaded between the index and the lookup: not listed
    }
  }
  return [...new Set(names)].sort();
}

/** The model a request names, looked up once; OpenAI's 404 if there is no such model. */
export function openAiModel(server: InferenceServer, name: string): ResolvedModel {
  try {
    return server.resolveModel(name);
  } catch (e) {
    // A name the server does not know, or a model with no ready version, is one OpenAI's API does not have; a
    // server that is stopping answers for itself.
    if (isNereidError(e) && (e.code === 'INVALID_ARG' || e.code === 'NOT_FOUND')) throw modelNotFound(name);
    throw e;
  }
}

/** The model, looked up once for the request, if it is a ready text model; OpenAI's 404 if there is no such model. */
export function textModel(server: InferenceServer, name: string): ResolvedModel {
  const model = openAiModel(server, name);
  if (!isTextModel(model)) throw badRequest(`model '${name}' is not a text model: it needs a TYPE_STRING input '${TEXT_INPUT}' and output '${TEXT_OUTPUT}'`, 'model');
  return model;
}

/** text_input holding one string, shaped as the model declares it (a batch of one, variable dimensions 1). */
export function textInput(model: ResolvedModel, text: string): Tensor {
  const shape = model.inputs.get(TEXT_INPUT)!.shape.map((d) => (d < 0 ? 1 : d));
  return { name: TEXT_INPUT, datatype: 'BYTES', shape, data: [Buffer.from(text, 'utf8')] };
}

/** The text a response carries in text_output ('' when it carries none). */
export function textOf(r: InferenceResponse): string {
  const t = r.outputs.find((o) => o.name === TEXT_OUTPUT);
  if (!t || t.datatype !== 'BYTES') return '';
  let s = '';
  for (const e of t.data) s += Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('utf8');
  return s;
}
