import type { ModelCalls } from '../backends/backend.js';
import type { InferenceRequest } from '../inference/index.js';
import { ResponseStream } from '../inference/stream.js';
import type { LoadRequest } from '../models/manager.js';
import type { ModelVersion } from '../models/model-version.js';
import { CustomMetricFamilies } from '../observability/metrics/custom.js';
import type { Registry } from '../observability/metrics/server-metrics.js';
import type { ReservedKeys } from '../sharedmemory/reserved-keys.js';

/** The server's model management as a running model may call it. */
export interface ModelControl {
  loadModel(name: string, request: LoadRequest): Promise<void>;
  unloadModel(name: string, options: { unloadDependents?: boolean }): Promise<void>;
  isModelReady(name: string, version?: number): boolean;
}

/**
 * What a running model may ask of the server (a Python model's BLS calls and model management), handed down
 * when models load. `route` finds the version a request runs on; unlike the server's public infer(), a call
 * still runs while the server is stopping, so requests in flight can finish.
 */
export function modelCalls(
  route: (request: InferenceRequest) => ModelVersion, control: ModelControl, ownSharedMemory: ReservedKeys, metrics: Registry | undefined,
): ModelCalls {
  return {
    reserveSharedMemory: (prefix) => ownSharedMemory.reserve(prefix),
    infer: (request) => {
      try {
        return route(request).infer(request);
      } catch (e) {
        return Promise.reject(e);
      }
    },
    inferStream: (request) => {
      try {
        return route(request).inferStream(request);
      } catch (e) {
        return ResponseStream.failed(e);
      }
    },
    loadModel: (name, request) => control.loadModel(name, request),
    unloadModel: (name, options) => control.unloadModel(name, options),
    isModelReady: (name, version) => control.isModelReady(name, version),
    metrics: new CustomMetricFamilies(metrics),
  };
}
