import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadProtos } from '../../../src/frontends/grpc/proto.js';
import { ROOT } from '../../helpers/paths.js';

// proto/ is what clients compile: model_config.proto must be what its generator writes from the schema the
// config parser uses, and the service must list Triton's RPCs in Triton's order.

test('proto/model_config.proto is current with src/config/schema.ts (scripts/gen-model-config-proto.mjs)', async () => {
  const { modelConfigProto } = (await import(join(ROOT, 'scripts', 'gen-model-config-proto.mjs'))) as { modelConfigProto(): string };
  assert.equal(readFileSync(join(ROOT, 'proto', 'model_config.proto'), 'utf8'), modelConfigProto());
});

test('GRPCInferenceService has every RPC Triton defines, in its order', () => {
  const p = loadProtos();
  assert.deepEqual(Object.keys(p.inference), [
    'ServerLive', 'ServerReady', 'ModelReady', 'ServerMetadata', 'ModelMetadata', 'ModelInfer', 'ModelStreamInfer', 'ModelConfig',
    'ModelStatistics', 'RepositoryIndex', 'RepositoryModelLoad', 'RepositoryModelUnload', 'SystemSharedMemoryStatus',
    'SystemSharedMemoryRegister', 'SystemSharedMemoryUnregister', 'CudaSharedMemoryStatus', 'CudaSharedMemoryRegister',
    'CudaSharedMemoryUnregister', 'TraceSetting', 'LogSettings',
  ]);
  assert.equal(p.inference['ModelStreamInfer']!.path, '/inference.GRPCInferenceService/ModelStreamInfer');
  assert.ok(p.inference['ModelStreamInfer']!.requestStream && p.inference['ModelStreamInfer']!.responseStream);
  assert.equal(p.health['Check']!.path, '/grpc.health.v1.Health/Check');
});

test('field numbers of the inference messages, as Triton numbers them', () => {
  const p = loadProtos();
  const numbers = (type: string) => Object.fromEntries(p.type(type).fieldsArray.map((f) => [f.name, f.id]));
  assert.deepEqual(numbers('inference.ModelInferRequest'), { model_name: 1, model_version: 2, id: 3, parameters: 4, inputs: 5, outputs: 6, raw_input_contents: 7 });
  assert.deepEqual(numbers('inference.ModelInferResponse'), { model_name: 1, model_version: 2, id: 3, parameters: 4, outputs: 5, raw_output_contents: 6 });
  assert.deepEqual(numbers('inference.InferTensorContents'), { bool_contents: 1, int_contents: 2, int64_contents: 3, uint_contents: 4, uint64_contents: 5, fp32_contents: 6, fp64_contents: 7, bytes_contents: 8 });
  assert.deepEqual(numbers('inference.InferParameter'), { bool_param: 1, int64_param: 2, string_param: 3, double_param: 4, uint64_param: 5 });
  assert.deepEqual(numbers('inference.ModelStreamInferResponse'), { error_message: 1, infer_response: 2 });
  assert.deepEqual(numbers('inference.ModelStatistics'), { name: 1, version: 2, last_inference: 3, inference_count: 4, execution_count: 5, inference_stats: 6, batch_stats: 7, memory_usage: 8, response_stats: 9 });
  assert.deepEqual(numbers('inference.CudaSharedMemoryRegisterRequest'), { name: 1, raw_handle: 2, device_id: 3, byte_size: 4 });
});
