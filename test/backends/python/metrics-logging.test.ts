import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InferenceServer } from '../../../src/index.js';
import type { Logger } from '../../../src/observability/logger.js';
import { PYTHON_FIXTURES, fp32, fp32s, output, pythonSkip } from './helpers.js';

// A Python model's own metrics (pb_utils.MetricFamily) on the metrics endpoint beside the server's, and its
// Logger lines in the server log at their levels.

const skip = pythonSkip();

function capturingLogger(lines: string[]): Logger {
  const at = (level: string) => (m: string): void => void lines.push(`${level} ${m}`);
  const l: Logger = {
    error: at('E'), warn: at('W'), warning: at('W'), info: at('I'), verbose: (n, m) => void lines.push(`V${n} ${m}`),
    isVerbose: () => true, child: () => l,
    settings: () => ({ log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 1, log_format: 'default' }),
    update: () => undefined, close: () => Promise.resolve(),
  };
  return l;
}

test('custom metrics: a counter, a gauge and a histogram a model.py made, exported; Logger lines at their levels', { skip }, async () => {
  const lines: string[] = [];
  const server = await InferenceServer.create(
    { modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['custom_metrics'], metrics: { cpu: false } },
    { logger: capturingLogger(lines) },
  );
  try {
    const r = await server.infer({ model: 'custom_metrics', inputs: [fp32('IN', [0.5, 5, 50, 500])] });
    assert.deepEqual(fp32s(output(r.outputs, 'OUT')), [1, 10, 100, 1000]);
    const text = await server.metricsText();
    assert.match(text, /# HELP requests_process_latency_ns Cumulative time spent processing requests\n# TYPE requests_process_latency_ns counter\n/);
    const counter = /requests_process_latency_ns\{model="custom_metrics",version="1"\} (\d+)/.exec(text);
    assert.ok(counter && Number(counter[1]) > 0, text);
    assert.match(text, /last_input_size\{model="custom_metrics"\} 4\n/);
    assert.match(text, /input_values_bucket\{model="custom_metrics",le="1"\} 1\n/);
    assert.match(text, /input_values_bucket\{model="custom_metrics",le="10"\} 2\n/);
    assert.match(text, /input_values_bucket\{model="custom_metrics",le="100"\} 3\n/);
    assert.match(text, /input_values_bucket\{model="custom_metrics",le="\+Inf"\} 4\n/);
    assert.match(text, /input_values_sum\{model="custom_metrics"\} 555.5\n/);
    assert.match(text, /input_values_count\{model="custom_metrics"\} 4\n/);
    // Triton's own families are still there.
    assert.match(text, /nv_inference_request_success\{model="custom_metrics",version="1"\} 1/);

    assert.ok(lines.some((l) => /^I custom_metrics_0: custom_metrics initialized$/.test(l)), lines.join('\n'));
    assert.ok(lines.some((l) => /^W custom_metrics_0: saw 4 values$/.test(l)));
    assert.ok(lines.some((l) => /^V1 custom_metrics_0: verbose detail$/.test(l)));
    assert.ok(lines.some((l) => /^E custom_metrics_0: counter now \d+$/.test(l)));

    // At unload the model's metrics leave the endpoint.
    await server.unloadModel('custom_metrics');
    assert.doesNotMatch(await server.metricsText(), /last_input_size\{/);
  } finally {
    await server.close();
  }
});

test('with metrics off a model that records custom metrics still loads and runs', { skip }, async () => {
  const server = await InferenceServer.create({ modelRepositories: [PYTHON_FIXTURES], modelControlMode: 'explicit', loadModels: ['custom_metrics'] }, { logger: capturingLogger([]) });
  try {
    const r = await server.infer({ model: 'custom_metrics', inputs: [fp32('IN', [1, 2])] });
    assert.deepEqual(fp32s(output(r.outputs, 'OUT')), [2, 4]);
  } finally {
    await server.close();
  }
});
