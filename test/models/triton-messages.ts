import type { BothFrontends } from '../helpers/frontends.js';
import type { TritonMessage } from '../helpers/triton-messages.js';

/**
 * Triton's words for the refusals of the model repository and model control (load, unload, index), of the
 * metadata, config and statistics of models that cannot serve, and of the log and trace settings. Each row
 * triggers its refusal over HTTP and, where Triton's gRPC frontend has the same refusal, over gRPC.
 */
export interface ModelsContext {
  /**
   * --model-control-mode=explicit over a repository with `simple`, `gone` (a copy of simple), `bad_onnx` (its
   * version cannot load), `bad_config` (config.pbtxt does not parse), `noversions` (a config, no version folder),
   * ensembles `ens_missing` (a step on a model no repository has), `ens_version` (on simple version 7) and
   * `ens_bad` (on bad_onnx), and a second repository that also holds a `dup`, as the first one does.
   */
  readonly explicit: BothFrontends;
  /** Model control mode none, serving `simple`. */
  readonly none: BothFrontends;
  /** --model-namespacing over two repositories that both hold `simple`. */
  readonly namespaced: BothFrontends;
  /** Creates a server that loads `bad_onnx` at startup; resolves with why it refused to start. */
  startupFailure(): Promise<string>;
}

export interface ModelsMessage extends TritonMessage {
  /** Makes the refusal happen over HTTP (or in-process, for a refusal no frontend carries). */
  readonly http?: (c: ModelsContext) => Promise<string>;
  /** Makes it happen over gRPC. */
  readonly grpc?: (c: ModelsContext) => Promise<string>;
}

const MRM = 'core model_repository_manager.cc';
const LIFECYCLE = 'core model_lifecycle.cc';
const HTTP_REPO = 'server http_server.cc HandleRepositoryControl';
const GRPC_LOAD = 'server grpc_server.cc RepositoryModelLoad';

const httpLoad = (b: BothFrontends, model: string, body: unknown = {}) => b.httpError(`/v2/repository/models/${model}/load`, body);
const grpcLoad = (b: BothFrontends, model: string, parameters: Record<string, unknown> = {}) =>
  b.grpcError('RepositoryModelLoad', { model_name: model, parameters });
const httpUnload = (b: BothFrontends, model: string, body: unknown = {}) => b.httpError(`/v2/repository/models/${model}/unload`, body);
const grpcUnload = (b: BothFrontends, model: string, parameters: Record<string, unknown> = {}) =>
  b.grpcError('RepositoryModelUnload', { model_name: model, parameters });

/** Loads `model` (which must load) then unloads it, so that it is known but has no version that serves. */
async function loadedThenUnloaded(b: BothFrontends, model: string): Promise<void> {
  await b.server.loadModel(model);
  await b.server.unloadModel(model);
}

export const MODELS_MESSAGES: readonly ModelsMessage[] = [
  {
    source: `${MRM} LoadUnloadModel`,
    refusal: 'load when model control is not explicit',
    words: 'explicit model load / unload is not allowed if polling is enabled',
    http: (c) => httpLoad(c.none, 'simple'),
    grpc: (c) => grpcLoad(c.none, 'simple'),
  },
  {
    source: `${MRM} LoadUnloadModel`,
    refusal: 'unload when model control is not explicit',
    words: 'explicit model load / unload is not allowed if polling is enabled',
    http: (c) => httpUnload(c.none, 'simple'),
    grpc: (c) => grpcUnload(c.none, 'simple'),
  },
  {
    source: `${HTTP_REPO} / ${GRPC_LOAD}`,
    refusal: 'load naming a repository',
    words: "'repository_name' specification is not supported",
    http: (c) => c.explicit.httpError('/v2/repository/elsewhere/models/simple/load', {}),
    grpc: (c) => c.explicit.grpcError('RepositoryModelLoad', { repository_name: 'elsewhere', model_name: 'simple' }),
  },
  {
    source: 'server http_server.cc HandleRepositoryIndex / grpc_server.cc RepositoryIndex',
    refusal: 'index of a named repository',
    words: "'repository_name' specification is not supported",
    http: (c) => c.explicit.httpError('/v2/repository/elsewhere/index', {}),
    grpc: (c) => c.explicit.grpcError('RepositoryIndex', { repository_name: 'elsewhere' }),
  },
  {
    source: `${MRM} LoadUnloadModel (L0_lifecycle test_load_unload_same_model / test_model_control checks it)`,
    refusal: 'load a model no repository has',
    words: "failed to load 'unknown_model', failed to poll from model repository",
    http: (c) => httpLoad(c.explicit, 'unknown_model'),
    grpc: (c) => grpcLoad(c.explicit, 'unknown_model'),
  },
  {
    source: `${MRM} Poll (not unique across all model repositories), then LoadUnloadModel`,
    refusal: 'load a model two repositories hold',
    words: "failed to load 'dup', failed to poll from model repository",
    http: (c) => httpLoad(c.explicit, 'dup'),
    grpc: (c) => grpcLoad(c.explicit, 'dup'),
  },
  {
    source: `${MRM} InitializeModelInfo (the config is read while polling), then LoadUnloadModel`,
    refusal: 'load a model whose config cannot be used',
    words: "failed to load 'bad_config', failed to poll from model repository",
    http: (c) => httpLoad(c.explicit, 'bad_config'),
    grpc: (c) => grpcLoad(c.explicit, 'bad_config'),
  },
  {
    source: `${MRM} InitializeModelInfo ("Invalid config override"), then LoadUnloadModel (simple_http_model_control.py expects the failure)`,
    refusal: 'load with a config override that is not a model config',
    words: "failed to load 'simple', failed to poll from model repository",
    http: (c) => httpLoad(c.explicit, 'simple', { parameters: { config: '{{"max_batch_size": 16}' } }),
    grpc: (c) => grpcLoad(c.explicit, 'simple', { config: { string_param: '{{"max_batch_size": 16}' } }),
  },
  {
    source: `${MRM} LoadUnloadModels ("load failed for model"), ${LIFECYCLE} OnLoadComplete`,
    refusal: 'load a model whose version fails to load',
    words: "load failed for model 'bad_onnx': version 1 is at UNAVAILABLE state",
    http: (c) => httpLoad(c.explicit, 'bad_onnx'),
    grpc: (c) => grpcLoad(c.explicit, 'bad_onnx'),
  },
  {
    source: `${LIFECYCLE} AsyncLoad, then ${MRM} LoadUnloadModels`,
    refusal: 'load a model with no version under its version policy',
    words: "load failed for model 'noversions': at least one version must be available under the version policy of model 'noversions'",
    http: (c) => httpLoad(c.explicit, 'noversions'),
    grpc: (c) => grpcLoad(c.explicit, 'noversions'),
  },
  {
    source: `${MRM} DependencyGraph::ConnectDependencyGraph`,
    refusal: 'load an ensemble with a step on a model no repository has',
    words: 'ensemble ens_missing contains models that are not available or ambiguous: no_such_model',
    http: (c) => httpLoad(c.explicit, 'ens_missing'),
    grpc: (c) => grpcLoad(c.explicit, 'ens_missing'),
  },
  {
    source: `${MRM} CheckNode`,
    refusal: 'load an ensemble with a step on a version that is not loaded',
    words: "ensemble 'ens_version' depends on 'simple' whose required version 7 is not loaded.",
    http: (c) => httpLoad(c.explicit, 'ens_version'),
    grpc: (c) => grpcLoad(c.explicit, 'ens_version'),
  },
  {
    source: `${MRM} CheckNode`,
    refusal: 'load an ensemble with a step on a model that has no loaded version',
    words: "ensemble 'ens_bad' depends on 'bad_onnx' which has no loaded version.",
    http: (c) => httpLoad(c.explicit, 'ens_bad'),
    grpc: (c) => grpcLoad(c.explicit, 'ens_bad'),
  },
  {
    source: GRPC_LOAD,
    refusal: "gRPC load whose 'config' is not a string_param",
    words: "invalid value type for load parameter 'config', expected string_param.",
    grpc: (c) => grpcLoad(c.explicit, 'simple', { config: { bool_param: true } }),
  },
  {
    source: GRPC_LOAD,
    refusal: "gRPC load whose 'file:' parameter is not a bytes_param",
    words: "invalid value type for load parameter 'file:1/model.onnx', expected bytes_param.",
    grpc: (c) => grpcLoad(c.explicit, 'simple', { config: { string_param: '{}' }, 'file:1/model.onnx': { string_param: 'x' } }),
  },
  {
    source: GRPC_LOAD,
    refusal: 'gRPC load with a parameter other than config and file:',
    words: "unrecognized load parameter 'colour'.",
    grpc: (c) => grpcLoad(c.explicit, 'simple', { colour: { string_param: 'blue' } }),
  },
  {
    source: HTTP_REPO,
    refusal: 'HTTP load with a parameter other than config and file:',
    words: 'unexpected error on creating Triton parameter',
    http: (c) => httpLoad(c.explicit, 'simple', { parameters: { colour: 'blue' } }),
  },
  {
    source: `${HTTP_REPO}; common triton_json.h MemberAsString`,
    refusal: 'HTTP load parameter that is not a string',
    words: 'attempt to access JSON non-string as string',
    http: (c) => httpLoad(c.explicit, 'simple', { parameters: { config: 16 } }),
  },
  {
    source: `${HTTP_REPO}; common triton_json.h Members`,
    refusal: "HTTP load whose 'parameters' is not an object",
    words: 'attempt to get members for non-object',
    http: (c) => httpLoad(c.explicit, 'simple', { parameters: ['config'] }),
  },
  {
    source: 'server grpc_server.cc RepositoryModelUnload',
    refusal: "gRPC unload whose 'unload_dependents' is not a bool_param",
    words: "invalid value type for 'unload_dependents' parameter, expected bool_param.",
    grpc: (c) => grpcUnload(c.explicit, 'simple', { unload_dependents: { string_param: 'yes' } }),
  },
  {
    source: HTTP_REPO,
    refusal: "HTTP unload whose 'unload_dependents' is not a boolean",
    words: "Unable to parse 'unload_dependents': attempt to access JSON non-boolean as boolean",
    http: (c) => httpUnload(c.explicit, 'simple', { parameters: { unload_dependents: 'yes' } }),
  },
  {
    source: 'server http_server.cc HandleRepositoryIndex; common triton_json.h AsBool',
    refusal: "HTTP index whose 'ready' is not a boolean",
    words: 'attempt to access JSON non-boolean as boolean',
    http: (c) => c.explicit.httpError('/v2/repository/index', { ready: 'yes' }),
  },
  {
    source: `${MRM} FindModelIdentifier`,
    refusal: 'metadata of a model no repository has',
    words: "Request for unknown model: 'nope' is not found",
    http: (c) => c.explicit.httpError('/v2/models/nope'),
    grpc: (c) => c.explicit.grpcError('ModelMetadata', { name: 'nope' }),
  },
  {
    source: `${MRM} FindModelIdentifier`,
    refusal: 'config of a model no repository has',
    words: "Request for unknown model: 'nope' is not found",
    http: (c) => c.explicit.httpError('/v2/models/nope/config'),
    grpc: (c) => c.explicit.grpcError('ModelConfig', { name: 'nope' }),
  },
  {
    source: `${MRM} GetModel, ${LIFECYCLE} GetModel`,
    refusal: 'metadata of a version the model does not have',
    words: "Request for unknown model: 'simple' version 9 is not found",
    http: async (c) => {
      await c.explicit.server.loadModel('simple');
      return c.explicit.httpError('/v2/models/simple/versions/9');
    },
    grpc: async (c) => {
      await c.explicit.server.loadModel('simple');
      return c.explicit.grpcError('ModelMetadata', { name: 'simple', version: '9' });
    },
  },
  {
    source: `${MRM} GetModel, ${LIFECYCLE} GetModel`,
    refusal: 'metadata of a model whose versions were all unloaded',
    words: "Request for unknown model: 'gone' has no available versions",
    http: async (c) => {
      await loadedThenUnloaded(c.explicit, 'gone');
      return c.explicit.httpError('/v2/models/gone');
    },
    grpc: async (c) => {
      await loadedThenUnloaded(c.explicit, 'gone');
      return c.explicit.grpcError('ModelMetadata', { name: 'gone' });
    },
  },
  {
    source: `${MRM} GetModel, ${LIFECYCLE} GetModel`,
    refusal: 'config of a version that is not ready',
    words: "Request for unknown model: 'gone' version 1 is not at ready state",
    http: async (c) => {
      await loadedThenUnloaded(c.explicit, 'gone');
      return c.explicit.httpError('/v2/models/gone/versions/1/config');
    },
    grpc: async (c) => {
      await loadedThenUnloaded(c.explicit, 'gone');
      return c.explicit.grpcError('ModelConfig', { name: 'gone', version: '1' });
    },
  },
  {
    source: 'core server.cc InferenceServer::GetModelStatistics path, tritonserver.cc TRITONSERVER_ServerModelStatistics',
    refusal: 'statistics of a model that is not available',
    words: "requested model 'nope' is not available",
    http: (c) => c.explicit.httpError('/v2/models/nope/stats'),
    grpc: (c) => c.explicit.grpcError('ModelStatistics', { name: 'nope' }),
  },
  {
    source: `${MRM} FindModelIdentifier`,
    refusal: 'a name in several namespaces',
    words: "There are 2 identifiers of model 'simple' in global map, model namespace must be provided to resolve ambiguity.",
    http: (c) => c.namespaced.httpError('/v2/models/simple'),
    grpc: (c) => c.namespaced.grpcError('ModelMetadata', { name: 'simple' }),
  },
  {
    source: `${MRM} Create ("failed to load all models")`,
    refusal: 'a model that fails to load at startup',
    words: 'failed to load all models',
    http: (c) => c.startupFailure(),
  },
  {
    source: 'server http_server.cc HandleLogging',
    refusal: 'set the log file over the network',
    words: 'log file location can not be updated through network protocol',
    http: (c) => c.explicit.httpError('/v2/logging', { log_file: '/tmp/x.log' }),
  },
  {
    source: 'server http_server.cc HandleLogging; common triton_json.h AsBool',
    refusal: 'HTTP log_info that is not a boolean',
    words: 'attempt to access JSON non-boolean as boolean',
    http: (c) => c.explicit.httpError('/v2/logging', { log_info: 'yes' }),
  },
  {
    source: 'server http_server.cc HandleLogging; common triton_json.h AsUInt',
    refusal: 'HTTP log_verbose_level that is not an unsigned integer',
    words: 'attempt to access JSON non-unsigned-integer as unsigned-integer',
    http: (c) => c.explicit.httpError('/v2/logging', { log_verbose_level: -1 }),
  },
  {
    source: 'server http_server.cc HandleLogging',
    refusal: 'HTTP log_format other than default and ISO8601',
    words: 'invalid argument for --log_format, got: xml',
    http: (c) => c.explicit.httpError('/v2/logging', { log_format: 'xml' }),
  },
  {
    source: 'server grpc_server.cc LogSettings',
    refusal: 'gRPC log_info that is not a bool_param',
    words: "expect boolean for 'log_info'",
    grpc: (c) => c.explicit.grpcError('LogSettings', { settings: { log_info: { string_param: 'yes' } } }),
  },
  {
    source: 'server grpc_server.cc LogSettings',
    refusal: 'gRPC log_verbose_level that is not a uint32_param',
    words: "expect int32 for 'log_verbose_level'",
    grpc: (c) => c.explicit.grpcError('LogSettings', { settings: { log_verbose_level: { bool_param: true } } }),
  },
  {
    source: 'server grpc_server.cc LogSettings',
    refusal: 'gRPC log_format that is not a string_param',
    words: "expect string for 'log_format'",
    grpc: (c) => c.explicit.grpcError('LogSettings', { settings: { log_format: { bool_param: true } } }),
  },
  {
    source: 'server grpc_server.cc LogSettings',
    refusal: 'gRPC log_format other than default and ISO8601',
    words: 'invalid argument for log_format, got: xml',
    grpc: (c) => c.explicit.grpcError('LogSettings', { settings: { log_format: { string_param: 'xml' } } }),
  },
  {
    source: 'server http_server.cc HandleTrace',
    refusal: 'HTTP trace settings of a model that is not ready',
    words: 'Request for unknown model : nosuch',
    http: (c) => c.explicit.httpError('/v2/models/nosuch/trace/setting', {}),
  },
  {
    source: 'server grpc_server.cc TraceSetting',
    refusal: 'gRPC trace settings of a model that is not ready',
    words: 'Request for unknown model : nosuch',
    grpc: (c) => c.explicit.grpcError('TraceSetting', { model_name: 'nosuch', settings: {} }),
  },
  {
    source: 'server http_server.cc HandleTrace',
    refusal: 'HTTP trace_file update',
    words: 'trace file location can not be updated through network protocol',
    http: (c) => c.explicit.httpError('/v2/trace/setting', { trace_file: '/tmp/x.json' }),
  },
  {
    source: 'server grpc_server.cc TraceSetting',
    refusal: 'gRPC trace_level OFF with another level',
    words: "Expect only one trace level 'OFF' is specified",
    grpc: (c) => c.explicit.grpcError('TraceSetting', { settings: { trace_level: { value: ['OFF', 'TIMESTAMPS'] } } }),
  },
];
