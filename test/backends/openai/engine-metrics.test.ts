import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engineMetrics } from '../../../src/backends/openai/engine-metrics.js';

// The engines' own names for the model-server protocol's gauges, in the exposition text each one serves.

test('vLLM: the series of the served model, with the KV-cache share', () => {
  const text = [
    '# HELP vllm:num_requests_waiting Number of requests waiting to be processed.',
    '# TYPE vllm:num_requests_waiting gauge',
    'vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0',
    'vllm:num_requests_waiting{engine="0",model_name="other"} 7.0',
    'vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0',
    'vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.25',
  ].join('\n');
  assert.deepEqual(engineMetrics(text, 'meta-llama/Llama-3.1-8B-Instruct'), { waiting: 3, running: 5, kvCacheUsage: 0.25 });
});

test("SGLang, llama-server and Triton TensorRT-LLM under their names; series of one unnamed model are summed", () => {
  assert.deepEqual(engineMetrics('sglang:num_queue_reqs{model_name="m"} 2\nsglang:num_running_reqs{model_name="m"} 1\nsglang:token_usage{model_name="m"} 0.5\n', 'm'),
    { waiting: 2, running: 1, kvCacheUsage: 0.5 });
  assert.deepEqual(engineMetrics('llamacpp:requests_processing 2\nllamacpp:requests_deferred 4\n', 'tiny'), { waiting: 4, running: 2, kvCacheUsage: undefined });
  const trt = [
    'nv_trt_llm_request_metrics{model="ensemble",request_type="waiting",version="1"} 6',
    'nv_trt_llm_request_metrics{model="ensemble",request_type="scheduled",version="1"} 2',
    'nv_trt_llm_request_metrics{model="ensemble",request_type="max",version="1"} 64',
    'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="ensemble",version="1"} 0.75',
    'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="max",model="ensemble",version="1"} 4096',
  ].join('\n');
  assert.deepEqual(engineMetrics(trt, 'ensemble'), { waiting: 6, running: 2, kvCacheUsage: 0.75 });
  assert.deepEqual(engineMetrics('vllm:num_requests_waiting{model_name="a"} 1\nvllm:num_requests_waiting{model_name="b"} 2\n', 'served-as-c'),
    { waiting: 3, running: undefined, kvCacheUsage: undefined });
});

test('an engine that reports no request gauges reports no load', () => {
  assert.equal(engineMetrics('# nothing\nprocess_cpu_seconds_total 12\n', 'm'), undefined);
  assert.equal(engineMetrics('', 'm'), undefined);
});
