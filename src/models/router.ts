import { NereidError, invalidArg, isNereidError, unavailable } from '../errors.js';
import type { ModelConfig, ModelInput, ModelOutput } from '../config/types.js';
import { NO_RESPONSE, type InferenceRequest, type Parameters } from '../inference/index.js';
import type { Job } from '../scheduler/scheduler.js';
import type { ComposingModel } from './ensemble.js';
import { ForwardingScheduler } from './forwarding.js';
import { parseRoutes, WeightedRoutes, type Route } from './routing.js';

/** The config parameter of a `router` model: its targets and their weights, "model:weight,…". */
export const ROUTES_PARAMETER = 'nereid_routes';
/** The config parameter that splits requests naming no version between versions, "version:weight,…". */
export const VERSION_WEIGHTS_PARAMETER = 'nereid_version_weights';
/** The request parameter that makes a routing choice sticky. */
export const ROUTING_KEY_PARAMETER = 'routing_key';

/** How a router reaches a target: the version a request would get there (its own version weights applied). */
export type RouteResolver = (model: string, routingKey: string | undefined) => ComposingModel;

export function stringParameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters?.[key]?.string_value;
}

/** The targets of a router model (backend "router"), from its nereid_routes parameter. */
export function routerTargets(config: ModelConfig): Route[] {
  const spec = stringParameter(config, ROUTES_PARAMETER);
  if (spec === undefined) throw invalidArg(`router model '${config.name}' needs the parameter ${ROUTES_PARAMETER} ("model:weight,model:weight")`);
  const routes = parseRoutes(spec, ROUTES_PARAMETER);
  if (routes.some((r) => r.target === config.name)) throw invalidArg(`router model '${config.name}' cannot route to itself`);
  return routes;
}

/** Refuses a nereid_version_weights that does not parse or names something other than version numbers. */
export function checkVersionWeights(config: ModelConfig): void {
  const spec = stringParameter(config, VERSION_WEIGHTS_PARAMETER);
  if (spec === undefined) return;
  for (const r of parseRoutes(spec, VERSION_WEIGHTS_PARAMETER)) {
    if (!/^[0-9]+$/.test(r.target)) throw invalidArg(`parameter ${VERSION_WEIGHTS_PARAMETER}: '${r.target}' is not a version number`);
  }
}

/**
 * The key that keeps a client on one target: the request's routing_key parameter, else its sequence id (the
 * requests of a sequence must reach the model that holds its state), else none (a weighted random pick).
 */
export function routingKey(parameters: Parameters | undefined, sequenceId: number | bigint | string | undefined): string | undefined {
  const k = parameters?.[ROUTING_KEY_PARAMETER];
  if (k !== undefined) return String(k);
  return sequenceId === undefined || sequenceId === 0 || sequenceId === 0n || sequenceId === '' ? undefined : `sequence:${String(sequenceId)}`;
}

/**
 * A router model's inputs, outputs, batching and transaction policy: those of its targets, which must all
 * agree (a client must not be able to tell which one answered, except by the numbers). A router that declares
 * its own must declare the same.
 */
export function completeRouterConfig(config: ModelConfig, targets: readonly { name: string; config: ModelConfig }[]): void {
  const [first, ...rest] = targets;
  if (!first) return;
  for (const t of rest) {
    const why = interfaceDifference(first.config, t.config);
    if (why) throw invalidArg(`router '${config.name}': targets '${first.name}' and '${t.name}' differ: ${why}`);
  }
  if (config.input.length === 0 && config.output.length === 0) {
    config.input = first.config.input.map((i) => ({ ...i }));
    config.output = first.config.output.map((o) => ({ ...o }));
    config.max_batch_size = first.config.max_batch_size;
    config.model_transaction_policy = { ...(first.config.model_transaction_policy ?? { decoupled: false }) } as NonNullable<ModelConfig['model_transaction_policy']>;
    return;
  }
  const why = interfaceDifference(config, first.config);
  if (why) throw invalidArg(`router '${config.name}' and its target '${first.name}' differ: ${why}`);
}

function interfaceDifference(a: ModelConfig, b: ModelConfig): string | undefined {
  if (a.max_batch_size !== b.max_batch_size) return `max_batch_size ${a.max_batch_size} vs ${b.max_batch_size}`;
  if ((a.model_transaction_policy?.decoupled ?? false) !== (b.model_transaction_policy?.decoupled ?? false)) return 'one is decoupled, the other is not';
  return tensorsDifference('input', a.input, b.input) ?? tensorsDifference('output', a.output, b.output);
}

function tensorsDifference(kind: string, a: readonly (ModelInput | ModelOutput)[], b: readonly (ModelInput | ModelOutput)[]): string | undefined {
  if (a.length !== b.length) return `${a.length} vs ${b.length} ${kind}s`;
  for (const x of a) {
    const y = b.find((t) => t.name === x.name);
    if (!y) return `${kind} '${x.name}' is missing from one`;
    if (x.data_type !== y.data_type) return `${kind} '${x.name}' is ${x.data_type} vs ${y.data_type}`;
    if (x.dims.join(',') !== y.dims.join(',')) return `${kind} '${x.name}' has dims [${x.dims.join(',')}] vs [${y.dims.join(',')}]`;
  }
  return undefined;
}

/**
 * A router model's scheduler: each request goes whole to one target, picked by weight (sticky with a routing
 * key), through that target's own scheduler, so its batching, limits and statistics apply; responses, streamed
 * ones included, come back as the router's. Targets without a ready version are skipped.
 */
export class RouterScheduler extends ForwardingScheduler {
  constructor(
    private readonly name: string,
    readonly routes: WeightedRoutes,
    private readonly resolve: RouteResolver,
    private readonly usable: (target: string) => boolean,
  ) {
    super();
  }

  enqueue(job: Job): void {
    if (this.refuseWhenStopped(job, `Server is stopping, scheduler for model has stopped accepting new inference requests (model '${this.name}' is unloading)`)) return;
    const key = routingKey(job.parameters, job.sequenceId);
    const target = this.routes.pick(key, this.usable);
    if (target === undefined) return job.reject(unavailable(`router '${this.name}': none of its targets (${this.routes.routes.map((r) => r.target).join(', ')}) is ready`));
    let model: ComposingModel;
    try {
      model = this.resolve(target, key);
    } catch (e) {
      return job.reject(isNereidError(e) ? e : new NereidError('INTERNAL', String(e)));
    }
    const request: InferenceRequest = {
      model: target, version: model.version, id: job.id, inputs: job.inputs, outputs: job.outputs.map((name) => ({ name })),
      parameters: job.parameters, priority: job.priority, timeoutUs: job.timeoutUs, tenant: job.tenant, signal: job.signal,
      sequenceId: job.sequenceId, sequenceStart: job.sequenceStart, sequenceEnd: job.sequenceEnd,
      // The router keeps nothing of the answer: lent outputs (and their release) pass through to the caller.
      borrowOutputs: job.borrowOutputs,
    };
    this.forward(job, () => (model.decoupled ? this.stream(model, request, job) : model.infer(request).then((r) => job.sender.send(r.outputs, true, r.parameters, r.release))));
  }

  private async stream(model: ComposingModel, request: InferenceRequest, job: Job): Promise<void> {
    for await (const r of model.inferStream(request)) job.sender.send(r.outputs, false, r.parameters);
    job.sender.send(NO_RESPONSE, true);
  }
}
