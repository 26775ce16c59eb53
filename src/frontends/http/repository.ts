import type { ServerResponse } from 'node:http';
import { invalidArg } from '../../errors.js';
import { configOverride, configOverrideError } from '../../server/config-override.js';
import type { InferenceServer } from '../../server/inference-server.js';
import { isObject } from './infer-request.js';
import { sendEmpty, sendJson } from './reply.js';

/** The model repository extension: index, load (with config and file overrides), unload. */

/** The parsed body (undefined when empty) as the object it must be. */
function optionalObject(j: unknown): Record<string, unknown> | undefined {
  if (j === undefined) return undefined;
  if (!isObject(j)) throw invalidArg('the request body must be a JSON object');
  return j;
}

/** Parses JSON off the event loop when large (the frontend's JsonParser.parseBody). */
export type ParseBody = (body: Buffer) => Promise<unknown>;

export async function handleRepoIndex(server: InferenceServer, body: unknown, res: ServerResponse): Promise<void> {
  const j = optionalObject(body);
  const ready = j?.['ready'];
  if (ready !== undefined && typeof ready !== 'boolean') throw invalidArg("attempt to access JSON non-boolean as boolean ('ready')");
  sendJson(res, 200, JSON.stringify(await server.repositoryIndex(ready ?? false)));
}

export async function handleLoad(server: InferenceServer, model: string, body: unknown, res: ServerResponse, parse: ParseBody): Promise<void> {
  const params = optionalObject(body)?.['parameters'];
  if (params !== undefined && !isObject(params)) throw invalidArg("attempt to get members for non-object ('parameters')");
  let config;
  const files = new Map<string, Uint8Array>();
  for (const [k, v] of Object.entries(params ?? {})) {
    if (typeof v !== 'string') throw invalidArg(`attempt to access JSON non-string as string (load parameter '${k}')`);
    if (k === 'config') {
      let cj: unknown;
      try {
        cj = await parse(Buffer.from(v));
      } catch (e) {
        throw configOverrideError(model, `failed to parse the 'config' load parameter as JSON: ${(e as Error).message.replace(/^failed to parse the request JSON buffer: /, '')}`);
      }
      config = configOverride(model, cj);
    } else if (k.startsWith('file:')) {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw invalidArg(`load parameter '${k}' must be base64`);
      files.set(k.slice(5), Buffer.from(v, 'base64'));
    } else {
      // Triton's HTTP frontend makes parameters of `config` and `file:` members only.
      throw invalidArg(`unexpected error on creating Triton parameter: unrecognized load parameter '${k}'`);
    }
  }
  await server.loadModel(model, { ...(config ? { config } : {}), ...(files.size > 0 ? { files } : {}) });
  sendEmpty(res, 200);
}

export async function handleUnload(server: InferenceServer, model: string, body: unknown, res: ServerResponse): Promise<void> {
  const params = optionalObject(body)?.['parameters'];
  if (params !== undefined && !isObject(params)) throw invalidArg("'parameters' must be a JSON object");
  const dependents = params?.['unload_dependents'];
  if (dependents !== undefined && typeof dependents !== 'boolean') {
    throw invalidArg("Unable to parse 'unload_dependents': attempt to access JSON non-boolean as boolean");
  }
  await server.unloadModel(model, { unloadDependents: dependents ?? false });
  sendEmpty(res, 200);
}
