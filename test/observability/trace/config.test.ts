import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTraceConfig } from '../../../src/observability/trace/config.js';
import { parseServeFlags, FlagError } from '../../../src/cli/flags.js';

test('--trace-config defaults are Triton’s: level OFF, rate 1000, count -1, Triton mode, the batch span processor’s 2048 / 5000 / 512', () => {
  const c = parseTraceConfig([], {});
  assert.deepEqual([c.level, c.rate, c.count, c.logFrequency, c.file, c.mode], [0, 1000, -1, 0, '', 'triton']);
  assert.deepEqual([c.otel.url, c.otel.bspMaxQueueSize, c.otel.bspScheduleDelayMs, c.otel.bspMaxExportBatchSize, c.otel.stageSpans], ['http://localhost:4318/v1/traces', 2048, 5000, 512, false]);
});

test('the batch span processor settings default from OTEL_BSP_*, and the trace config wins over them', () => {
  const env = { OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_SCHEDULE_DELAY: '7', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10' };
  const fromEnv = parseTraceConfig(['mode=opentelemetry'], env).otel;
  assert.deepEqual([fromEnv.bspMaxQueueSize, fromEnv.bspScheduleDelayMs, fromEnv.bspMaxExportBatchSize], [100, 7, 10]);
  const given = parseTraceConfig(['opentelemetry,bsp_schedule_delay=9', 'opentelemetry,bsp_max_export_batch_size=20'], env).otel;
  assert.deepEqual([given.bspScheduleDelayMs, given.bspMaxExportBatchSize], [9, 20]);
});

test('levels add up, OFF adds nothing; resources repeat; later values win for the rest', () => {
  const c = parseTraceConfig(['level=TIMESTAMPS', 'level=TENSORS', 'level=OFF', 'rate=5', 'rate=7', 'opentelemetry,resource=a=1', 'opentelemetry,resource=b=x=y', 'triton,log-frequency=3'], {});
  assert.deepEqual([c.level, c.rate, c.logFrequency], [3, 7, 3]);
  assert.deepEqual(c.otel.resources, [['a', '1'], ['b', 'x=y']]);
});

test('the deprecated --trace-* flags become --trace-config entries with Triton’s deprecation warning', () => {
  const o = parseServeFlags(['--model-repository=/m', '--trace-file=/tmp/t.json', '--trace-level=TIMESTAMPS', '--trace-rate=10', '--trace-count=5', '--trace-log-frequency=2']);
  assert.deepEqual(o.server.trace, ['triton,file=/tmp/t.json', 'level=TIMESTAMPS', 'rate=10', 'count=5', 'triton,log-frequency=2']);
  assert.equal(o.warnings.filter((w) => /'--trace-[a-z-]+' has been deprecated and will be removed in future releases\. Please use '--trace-config' instead\./.test(w)).length, 5);
});

test('bad --trace-config values stop the start, naming the flag', () => {
  for (const bad of ['level=LOUD', 'rate=abc', 'count=x', 'mode=jaeger', 'nosuch=1', 'opentelemetry,bsp_max_queue_size=0', 'triton,log-frequency=-1', 'rate']) {
    assert.throws(() => parseServeFlags(['--model-repository=/m', `--trace-config=${bad}`]), (e: unknown) => e instanceof FlagError, bad);
  }
  assert.throws(() => parseServeFlags(['--model-repository=/m', '--trace-config=opentelemetry,bsp_max_queue_size=10', '--trace-config=opentelemetry,bsp_max_export_batch_size=20']),
    /bsp_max_export_batch_size \(20\) must not exceed bsp_max_queue_size \(10\)/);
});
