import type { InferenceRequest } from '../inference/index.js';
import type { Logger } from '../observability/logger.js';

/**
 * Verbose request logs (--log-verbose ≥ 1), each line tagged with the request id as Triton tags its own:
 * the request as it arrives and how it ended. Called only when the level is on, so nothing is built otherwise.
 */
export function logRequest(log: Logger, request: InferenceRequest, done: Promise<unknown>): void {
  const tag = `[request id: ${request.id || '<id_unknown>'}]`;
  const target = `model '${request.model}'${request.version !== undefined ? ` version ${request.version}` : ''}`;
  log.verbose(1, `${tag} infer ${target}: ${request.inputs.length} input(s)${request.sequenceId ? `, sequence ${String(request.sequenceId)}` : ''}`);
  const started = process.hrtime.bigint();
  const ms = (): string => (Number(process.hrtime.bigint() - started) / 1e6).toFixed(3);
  done.then(
    () => log.verbose(1, `${tag} ${target} ended after ${ms()} ms`),
    (e: unknown) => log.verbose(1, `${tag} ${target} failed after ${ms()} ms: ${(e as Error).message}`),
  );
}
