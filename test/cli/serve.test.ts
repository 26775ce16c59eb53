import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { runNereid, spawnServer, tempRepository } from '../helpers/server.js';
import { postJson, request } from '../helpers/http.js';
import { pythonSkip } from '../backends/python/helpers.js';
import { until } from '../helpers/until.js';

// `nereid serve` as a process: exit codes, startup failures, and shutdown under load.

test('an unknown flag or a bad value exits 2 with a message; --help lists every flag and exits 0', async () => {
  const unknown = await runNereid(['serve', '--no-such-flag=1']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.out, /no-such-flag/);
  const bad = await runNereid(['serve', '--model-repository', EXAMPLES, '--http-port=eighty']);
  assert.equal(bad.code, 2);
  assert.match(bad.out, /http-port/);
  const help = await runNereid(['serve', '--help']);
  assert.equal(help.code, 0);
  for (const f of ['--model-repository', '--model-control-mode', '--exit-timeout-secs', '--strict-readiness', '--grpc-port', '--metrics-port', '--backend-config', '--log-format']) {
    assert.ok(help.out.includes(f), `--help mentions ${f}`);
  }
});

test('a model that fails to load stops the server (exit 1, with the reason) unless --exit-on-error=false', async () => {
  const repo = await tempRepository([{ from: join(EXAMPLES, 'simple') }, { from: join(FIXTURES, 'broken', 'bad_onnx') }]);
  try {
    const failed = await runNereid(['serve', '--model-repository', repo.dir, '--http-port=0', '--allow-grpc=false', '--allow-metrics=false']);
    assert.equal(failed.code, 1, failed.out);
    assert.match(failed.out, /bad_onnx/);
    const s = await spawnServer(['--model-repository', repo.dir, '--exit-on-error=false']);
    try {
      const r = await postJson(`${s.url}/v2/models/simple/infer`, {
        inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) }, { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) }],
      });
      assert.equal(r.status, 200);
      const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
      const broken = index.find((m) => m.name === 'bad_onnx');
      assert.equal(broken.state, 'UNAVAILABLE');
      assert.ok(broken.reason.length > 0);
      // Strict readiness (the default): one model down makes the server unready; live all the same.
      assert.equal((await request(`${s.url}/v2/health/ready`)).status, 400);
      assert.equal((await request(`${s.url}/v2/health/live`)).status, 200);
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    }
    const lax = await spawnServer(['--model-repository', repo.dir, '--exit-on-error=false', '--strict-readiness=false']);
    try {
      assert.equal((await request(`${lax.url}/v2/health/ready`)).status, 200);
    } finally {
      lax.child.kill('SIGTERM');
      await lax.exited;
    }
  } finally {
    await repo.remove();
  }
});

test('SIGTERM under load: unready at once, every request already received answered, exit 0', async () => {
  const s = await spawnServer(['--model-repository', join(FIXTURES, 'slow'), '--allow-metrics=true', '--metrics-port=0', '--metrics-address=127.0.0.1']);
  const metricsLine = /Started Metrics Service at [^:]+:(\d+)/;
  await until(() => metricsLine.test(s.output()), 'the metrics port');
  const metricsPort = Number(metricsLine.exec(s.output())![1]);
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(0.25) }] };
  const send = (): Promise<number | string> => postJson(`${s.url}/v2/models/slow_fp32/infer`, body).then((r) => r.status, (e: Error) => e.message);
  // Six requests against one instance without batching: one runs, five wait. The server's own pending gauge says
  // when all six have been received, so "before SIGTERM" is known, not guessed from the clock.
  const received = Array.from({ length: 6 }, send);
  await until(async () => {
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    const m = /nv_inference_pending_request_count\{[^}]*model="slow_fp32"[^}]*\} (\d+)/.exec(text);
    return m !== null && Number(m[1]) >= 5;
  }, 'five waiting requests');
  s.child.kill('SIGTERM');
  // Readiness turns off at once while the backlog drains.
  let sawUnready = false;
  for (let i = 0; i < 20 && !sawUnready; i++) {
    const r = await request(`${s.url}/v2/health/ready`).catch(() => ({ status: 0 }));
    sawUnready = r.status !== 200;
  }
  // Requests sent after SIGTERM are refused cleanly: a 4xx/503 JSON error or a closed connection, never a 500.
  const late = await Promise.all(Array.from({ length: 3 }, send));
  assert.deepEqual(await Promise.all(received), [200, 200, 200, 200, 200, 200], 'requests received before SIGTERM all succeeded');
  assert.equal(await s.exited, 0, s.output());
  assert.ok(sawUnready, 'readiness turned off during the drain');
  for (const r of late) assert.ok(!/^5(?!03)/.test(String(r)), `refusal was ${r}`);
});

test('--exit-timeout-secs bounds the drain: a long backlog does not keep the process alive; exit 1 as work was left', async () => {
  const s = await spawnServer(['--model-repository', join(FIXTURES, 'slow'), '--exit-timeout-secs=0']);
  const body = { inputs: [{ name: 'INPUT0', shape: [1, 16], datatype: 'FP32', data: new Array(16).fill(0.25) }] };
  const pending = Array.from({ length: 40 }, () => postJson(`${s.url}/v2/models/slow_fp32/infer`, body).catch(() => undefined));
  await sleep(200);
  s.child.kill('SIGTERM');
  assert.equal(await s.exited, 1, s.output());
  const replies = await Promise.all(pending);
  // Every request was answered: a 200, or a 503 for those the timeout caught. The drain was cut short (counted,
  // not timed): 40 requests of ~85 ms on one instance cannot all have run within a timeout of 0 s.
  for (const r of replies) assert.ok(r && (r.status === 200 || r.status === 503), `answered ${r?.status}`);
  assert.ok(replies.filter((r) => r?.status === 503).length > 0, 'no request was cut short by the exit timeout');
  assert.match(s.output(), /failed to stop server: Internal - Exit timeout expired\. Exiting immediately\./);
});

/** Whether a process is still running (a zombie waiting to be reaped counts as gone). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

test('SIGTERM while a Python execute() hangs: at the exit timeout every request is answered, the stub is killed, exit 1', { skip: pythonSkip() }, async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'python', 'hang') }]);
  try {
    const s = await spawnServer(['--model-repository', repo.dir, '--exit-timeout-secs=2']);
    const body = (v: number) => ({ inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [v] }] });
    const infer = (v: number) => postJson(`${s.url}/v2/models/hang/infer`, body(v)).then((r) => r, (e: Error) => e);
    const hung = infer(-1);
    await sleep(300); // the hung one first, then three behind it (one handed to the stub, two queued)
    const behind = [1, 2, 3].map(infer);
    await sleep(300);
    const pids = readdirSync(join(repo.dir, 'hang', 'pids')).map(Number);
    assert.equal(pids.length, 1);
    assert.ok(running(pids[0]!));
    s.child.kill('SIGTERM');
    const code = await Promise.race([s.exited, sleep(60_000, 'alive' as const)]);
    if (code === 'alive') s.child.kill('SIGKILL');
    assert.equal(code, 1, s.output());
    for (const r of await Promise.all([hung, ...behind])) {
      assert.ok(!(r instanceof Error), `answered, not dropped: ${String(r)}`);
      assert.equal(r.status, 503, r.body.toString());
      assert.match(r.json().error, /exit timeout/);
    }
    assert.equal(running(pids[0]!), false, 'the stub was stopped');
    assert.match(s.output(), /Exit timeout expired/);
  } finally {
    await repo.remove();
  }
});

test('SIGTERM while a Python initialize() hangs in a load: exit 1 at the exit timeout, and the stub does not outlive the server', { skip: pythonSkip() }, async () => {
  const repo = await tempRepository([{ from: join(FIXTURES, 'python', 'hang') }]);
  try {
    const config = join(repo.dir, 'hang', 'config.pbtxt');
    writeFileSync(config, `${readFileSync(config, 'utf8')}\nparameters { key: "INIT_DELAY_S" value { string_value: "1000" } }\n`);
    const s = await spawnServer(['--model-repository', repo.dir, '--model-control-mode=explicit', '--exit-timeout-secs=1']);
    const load = request(`${s.url}/v2/repository/models/hang/load`, { method: 'POST', body: '' }).then((r) => r, (e: Error) => e);
    let pids: number[] = [];
    for (let i = 0; i < 200 && pids.length === 0; i++) {
      await sleep(50);
      pids = existsSync(join(repo.dir, 'hang', 'pids')) ? readdirSync(join(repo.dir, 'hang', 'pids')).map(Number) : [];
    }
    assert.equal(pids.length, 1, 'the stub started and is in initialize()');
    s.child.kill('SIGTERM');
    const code = await Promise.race([s.exited, sleep(60_000, 'alive' as const)]);
    if (code === 'alive') s.child.kill('SIGKILL');
    assert.equal(code, 1, s.output());
    await load;
    for (let i = 0; i < 100 && running(pids[0]!); i++) await sleep(50);
    assert.equal(running(pids[0]!), false, 'the stub was stopped with the server');
  } finally {
    await repo.remove();
  }
});

test('explicit mode with --load-model loads only the named models', async () => {
  const s = await spawnServer(['--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple']);
  try {
    const index = (await postJson(`${s.url}/v2/repository/index`, {})).json() as any[];
    const ready = index.filter((m) => m.state === 'READY').map((m) => m.name);
    assert.deepEqual([...new Set(ready)], ['simple']);
    assert.ok(index.some((m) => m.name === 'simple_string' && m.state === undefined), 'models not loaded are listed by name only');
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
