/**
 * Extension points that may still change: writing and registering backends. Not covered by semver yet.
 * Applications import it as 'nereid/experimental' and pass a registry as InferenceServer.create's `backends`.
 */
export type {
  Backend, BackendInstance, BackendRequest, ExecutionTimes, InstanceSpec, ModelFiles,
  ModelCalls, CustomMetrics, CustomMetricFamily, CustomMetric,
} from './backends/backend.js';
export { BackendRegistry, defaultBackends, type BackendLoader } from './backends/registry.js';
export { NO_RESPONSE, type ResponseSender } from './inference/index.js';
