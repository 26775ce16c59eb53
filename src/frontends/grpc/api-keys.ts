import { isRefusal, type ApiKey, type ApiKeys, type KeyRefusal } from '../api-keys.js';
import { Status, type CallStatus } from './codes.js';
import type { Metadata } from './call.js';
import { category } from './restricted.js';

/** A call's key check, given the model its request names ('' or undefined: none). */
export type CallKeyCheck = (m: Metadata, model: string | undefined) => CallStatus | null;

/**
 * The API-key check of an RPC's calls (the `authorization` metadata, as Triton's clients pass headers), decided
 * once at start: null when the server has no keys, or for health RPCs left open.
 */
export function keyCheck(rpc: string, keys: ApiKeys | undefined): CallKeyCheck | null {
  const c = category(rpc);
  if (keys === undefined || c === undefined || (c === 'health' && !keys.protectHealth)) return null;
  return (m, model) => {
    const refusal = keys.check(m.get('authorization'), c, model === '' ? undefined : model);
    return refusal === null ? null : callStatus(refusal);
  };
}

/**
 * ModelStreamInfer's key: checked once as the stream opens (the key must hold `inference` for some model),
 * then each request against its model by permitStream. Null when the server has no keys.
 */
export function streamKey(keys: ApiKeys | undefined, m: Metadata): ApiKey | CallStatus | null {
  if (keys === undefined) return null;
  const key = keys.authenticate(m.get('authorization'));
  if (isRefusal(key)) return callStatus(key);
  const refusal = keys.permit(key, 'inference', undefined, true);
  return refusal === null ? key : callStatus(refusal);
}

/** The request field naming the model, for RPCs that name one (ModelStatistics' empty name: every model). */
const MODEL_FIELD: Readonly<Record<string, string>> = {
  ModelReady: 'name', ModelMetadata: 'name', ModelConfig: 'name', ModelStatistics: 'name',
  TraceSetting: 'model_name', RepositoryModelLoad: 'model_name', RepositoryModelUnload: 'model_name', ModelInfer: 'model_name',
};

/** The model a decoded request of `rpc` names, or undefined. */
export function requestModel(rpc: string, request: unknown): string | undefined {
  const field = MODEL_FIELD[rpc];
  if (field === undefined) return undefined;
  const v = (request as Record<string, unknown>)[field];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

export function callStatus(r: KeyRefusal): CallStatus {
  return { code: r.kind === 'unauthenticated' ? Status.UNAUTHENTICATED : Status.PERMISSION_DENIED, details: r.message };
}
