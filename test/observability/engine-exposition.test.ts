import { test } from 'node:test';
import assert from 'node:assert/strict';
import { relabelledExposition } from '../../src/observability/metrics/engine-exposition.js';

// Engines' metrics re-exported beside the server's: the model's labels on every sample, one HELP and TYPE per
// family across engines, histogram lines kept with their family, an engine's own `model` label renamed.

test('two engines of one kind merge per family, each sample under its model', () => {
  const vllm = (model: string, n: number): string => [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{engine="0",model_name="${model}"} ${n}`,
    '# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.',
    '# TYPE vllm:e2e_request_latency_seconds histogram',
    `vllm:e2e_request_latency_seconds_bucket{le="1.0",model_name="${model}"} ${n}`,
    `vllm:e2e_request_latency_seconds_sum{model_name="${model}"} 0.5`,
    `vllm:e2e_request_latency_seconds_count{model_name="${model}"} ${n}`,
    'process_open_fds 12',
  ].join('\n');
  const text = relabelledExposition([
    { labels: { model: 'a', version: '1' }, text: vllm('A', 2) },
    { labels: { model: 'b "quoted"', version: '3' }, text: vllm('B', 5) },
  ]);
  assert.equal(text, [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    'vllm:num_requests_running{model="a",version="1",engine="0",model_name="A"} 2',
    'vllm:num_requests_running{model="b \\"quoted\\"",version="3",engine="0",model_name="B"} 5',
    '# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.',
    '# TYPE vllm:e2e_request_latency_seconds histogram',
    'vllm:e2e_request_latency_seconds_bucket{model="a",version="1",le="1.0",model_name="A"} 2',
    'vllm:e2e_request_latency_seconds_sum{model="a",version="1",model_name="A"} 0.5',
    'vllm:e2e_request_latency_seconds_count{model="a",version="1",model_name="A"} 2',
    'vllm:e2e_request_latency_seconds_bucket{model="b \\"quoted\\"",version="3",le="1.0",model_name="B"} 5',
    'vllm:e2e_request_latency_seconds_sum{model="b \\"quoted\\"",version="3",model_name="B"} 0.5',
    'vllm:e2e_request_latency_seconds_count{model="b \\"quoted\\"",version="3",model_name="B"} 5',
    'process_open_fds{model="a",version="1"} 12',
    'process_open_fds{model="b \\"quoted\\"",version="3"} 12',
    '',
  ].join('\n'));
});

test("an engine's own model label becomes exported_model; the server's namespaces, comments and junk lines are dropped", () => {
  const engine = 'sglang:num_running_reqs{model="served",tp_rank="0"} 6\n# just a comment\n{broken} 1\n\nnv_inference_count{model="x"} 3\nnereid_anything 1\n';
  const text = relabelledExposition([{ labels: { model: 'm', version: '1' }, text: engine }]);
  assert.equal(text, 'sglang:num_running_reqs{model="m",version="1",exported_model="served",tp_rank="0"} 6\n');
  assert.equal(relabelledExposition([]), '');
});
