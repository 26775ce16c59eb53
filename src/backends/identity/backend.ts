import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelConfig } from '../../config/types.js';
import type { Backend, CustomMetric, InstanceSpec } from '../backend.js';
import { intParameter } from '../int-parameter.js';
import { IdentityInstance } from './instance.js';
import { identityPairs, type IdentityPair } from './pairs.js';

/**
 * Backend "identity": Triton's identity_backend, the model its QA and client examples use everywhere
 * (custom_identity_int32 and the like). Models have no file; the config says it all:
 *
 * - inputs INPUT<i> and outputs OUTPUT<i>, any datatype, BYTES included; each requested output is a copy of
 *   its input; batching and optional inputs (an absent one answers zeros) as Triton's;
 * - parameter `execute_delay_ms`: every execution first waits that long, times `instance_wise_delay_multiplier`
 *   × the instance's index when that is set (instance 0 waits the plain delay);
 * - parameter `creation_delay_sec`: the model's load waits that long, once;
 * - responses carry the parameters param0, param1 and param2; with metrics on, the counter
 *   `input_byte_size_counter{model,version}` adds up the bytes of every input copied.
 */
export const identityBackend: Backend = {
  name: 'identity',
  createInstance,
};

/** What the instances of one model version share (Triton's ModelState), keyed by the version's config. */
interface ModelState {
  readonly pairs: readonly IdentityPair[];
  readonly executeDelayMs: number;
  readonly multiplier: number;
  readonly created: Promise<void>;
  inputBytes: CustomMetric | undefined;
  instances: number;
}

const models = new WeakMap<ModelConfig, ModelState>();

async function createInstance(spec: InstanceSpec): Promise<IdentityInstance> {
  const state = modelState(spec);
  await state.created;
  if (spec.kind === 'KIND_GPU') {
    spec.logger.warn(`model '${spec.name}' instance '${spec.instanceName}' asks for KIND_GPU; running it on CPU`);
  }
  const index = instanceIndex(spec.config, spec.instanceName);
  const delayMs = state.executeDelayMs * Math.max(state.multiplier > 0 ? state.multiplier * index : 0, 1);
  state.instances++;
  if (state.instances === 1 && spec.calls?.metrics) {
    state.inputBytes = spec.calls.metrics
      .family('input_byte_size_counter', 'Cumulative input_byte_size across all identity model requests', 'counter')
      .metric({ model: spec.name, version: String(spec.version) });
  }
  const onClose = (): void => {
    if (--state.instances > 0) return;
    state.inputBytes?.delete();
    state.inputBytes = undefined;
    models.delete(spec.config);
  };
  return new IdentityInstance({ pairs: state.pairs, batched: spec.config.max_batch_size > 0, delayMs, inputBytes: state.inputBytes }, onClose);
}

/** The model's state, made (config checked, creation delay waited) by its first instance. */
function modelState(spec: InstanceSpec): ModelState {
  let state = models.get(spec.config);
  if (state) return state;
  const pairs = identityPairs(spec.config);
  const executeDelayMs = intParameter(spec.config, 'execute_delay_ms') ?? 0;
  // As in Triton, the multiplier counts only together with a delay.
  const multiplier = executeDelayMs > 0 ? intParameter(spec.config, 'instance_wise_delay_multiplier') ?? 0 : 0;
  const creationDelaySec = intParameter(spec.config, 'creation_delay_sec') ?? 0;
  if (creationDelaySec > 0) spec.logger.info(`Creation delay is set to: ${creationDelaySec}`);
  const created = creationDelaySec > 0 ? sleep(creationDelaySec * 1000) : Promise.resolve();
  state = { pairs, executeDelayMs, multiplier, created, inputBytes: undefined, instances: 0 };
  models.set(spec.config, state);
  return state;
}

/** The instance's index among all of the model's instances, in creation order (Triton's instance id). */
function instanceIndex(config: ModelConfig, instanceName: string): number {
  let before = 0;
  for (const g of config.instance_group) {
    for (let i = 0; i < g.count; i++) {
      if (`${g.name}_${i}` === instanceName) return before + i;
    }
    before += g.count;
  }
  return 0;
}
