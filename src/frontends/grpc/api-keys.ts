import { isRefusal, type ApiKey, type ApiKeys, type KeyRefusal } from '../api-keys.js';
import { Status, type CallStatus } from './codes.js';
import type { ServerCall } from './call.js';
import { category } from './restricted.js';

/**
 * A call's key check, given the model its request names ('' or undefined: none): the refusal, or the id of the
 * key that passed (the request's tenant), or null for a health RPC left open.
 */
export type CallKeyCheck = (call: ServerCall, model: string | undefined) => CallStatus | string | null;

/**
 * The API-key check of an RPC's calls (the `authorization` metadata, as Triton's clients pass headers), decided
 * once at start: null when the server has no keys, or for health RPCs left open. A call its key's quota counts
 * in flight is released when it ends.
 */
export function keyCheck(rpc: string, keys: ApiKeys | undefined): CallKeyCheck | null {
  const c = category(rpc);
  if (keys === undefined || c === undefined || (c === 'health' && !keys.protectHealth)) return null;
  return (call, model) => {
    const key = keys.check(call.get('authorization'), c, model === '' ? undefined : model);
    return key === null ? null : (admitted(keys, key, call) ?? (key as ApiKey).id);
  };
}

/**
 * ModelStreamInfer's key: checked once as the stream opens (the key must hold `inference` for some model; the
 * stream is one call in flight for its quota), then each request against its model and the key's rate by
 * permitStream. Null when the server has no keys.
 */
export function streamKey(keys: ApiKeys | undefined, call: ServerCall): ApiKey | CallStatus | null {
  if (keys === undefined) return null;
  const key = keys.authenticate(call.get('authorization'));
  if (isRefusal(key)) return callStatus(key);
  const refusal = keys.permit(key, 'inference', undefined, true);
  if (refusal !== null) return callStatus(refusal);
  return admitted(keys, key, call) ?? key;
}

/** A request of a stream opened with `key`: its model's scope and the key's rate; null when it may run. */
export function permitStream(keys: ApiKeys, key: ApiKey, model: string): KeyRefusal | null {
  return keys.permit(key, 'inference', model === '' ? undefined : model) ?? keys.admit(key, false);
}

function admitted(keys: ApiKeys, key: ApiKey | KeyRefusal, call: ServerCall): CallStatus | null {
  const refusal = isRefusal(key) ? key : keys.admit(key);
  if (refusal !== null) return callStatus(refusal);
  const quota = (key as ApiKey).quota;
  if (quota.tracksInflight) call.onEnded(() => quota.release());
  return null;
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

const CODE = { 'unauthenticated': Status.UNAUTHENTICATED, 'permission-denied': Status.PERMISSION_DENIED, 'over-quota': Status.RESOURCE_EXHAUSTED } as const;

export function callStatus(r: KeyRefusal): CallStatus {
  return { code: CODE[r.kind], details: r.message, retryAfterSecs: r.retryAfterSecs };
}
