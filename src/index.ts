/**
 * Nereid's public API for Node applications: the same InferenceServer the HTTP frontend serves.
 * Extension points that may still change (backend registration) live in ./experimental.ts ('nereid/experimental').
 */
export { InferenceServer } from './server/inference-server.js';
export type { ServerMetadata, ModelMetadata, TensorMetadata, CreateOptions, ResolvedModel, TensorInfo } from './server/inference-server.js';
export type { ServerOptions, ModelControlMode, MetricsOptions } from './server/options.js';
export type { InferenceRequest, InferenceResponse, RequestedOutput, Parameters, ParameterValue } from './inference/index.js';
export type { ResponseStream } from './inference/stream.js';
export type { Tensor, FixedTensor, BytesTensor } from './tensor/tensor.js';
export type { DataType } from './tensor/datatype.js';
export { elementCount } from './tensor/tensor.js';
export { serializeBytes, deserializeBytes } from './tensor/bytes.js';
export { NereidError, isNereidError, type ErrorCode } from './errors.js';
export type { IndexEntry, LoadRequest, ModelState } from './models/manager.js';
export { startHttpFrontend, type HttpFrontend, type HttpOptions } from './frontends/http/server.js';
export { startGrpcFrontend, type GrpcFrontend } from './frontends/grpc/server.js';
export type { GrpcOptions } from './frontends/grpc/options.js';
export { startMetricsFrontend, type MetricsFrontend, type MetricsFrontendOptions } from './frontends/metrics/server.js';
