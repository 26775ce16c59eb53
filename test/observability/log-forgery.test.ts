import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnServer } from '../helpers/server.js';
import { connect, failure, int32Bytes, unary } from '../helpers/grpc.js';
import { postJson } from '../helpers/http.js';
import { EXAMPLES } from '../helpers/paths.js';

// A client chooses text that reaches the log (request ids, model and input names): it must never start a
// record of its own or reach the terminal as an escape sequence, in any frontend and either escaping mode.

/** A forged record after a newline, a terminal escape that clears the screen, and Unicode line breaks. */
const FORGED = 'x\nI1125 00:00:00.000000 1 forged.cc:1] "pwned"\u001b[2J\r\u2028\u0085end';

async function waitForPort(output: () => string, pattern: RegExp): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const m = pattern.exec(output());
    if (m) return Number(m[1]);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no port in:\n${output()}`);
}

const isClientError = (status: number): boolean => status >= 400 && status < 500;

const inputs = (name0 = 'INPUT0') => [
  { name: name0, shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(1) },
  { name: 'INPUT1', shape: [1, 16], datatype: 'INT32', data: new Array(16).fill(2) },
];

for (const escape of ['1', '0']) {
  test(`client-chosen text cannot forge log records (TRITON_SERVER_ESCAPE_LOG_MESSAGES=${escape})`, async () => {
    const p = await spawnServer([
      '--model-repository', EXAMPLES, '--model-control-mode=explicit', '--load-model=simple', '--load-model=tiny_llm', '--log-verbose=1',
      '--allow-grpc=true', '--grpc-port=0', '--grpc-address=127.0.0.1', '--openai-port=0', '--openai-address=127.0.0.1',
    ], { TRITON_SERVER_ESCAPE_LOG_MESSAGES: escape });
    try {
      const grpcPort = await waitForPort(p.output, /Started GRPCInferenceService at [^:]+:(\d+)/);
      const openaiPort = await waitForPort(p.output, /Started OpenAI-compatible service at [^:]+:(\d+)/);
      // HTTP: a forged request id on a good request, a forged input name, a forged model name.
      assert.equal((await postJson(`${p.url}/v2/models/simple/infer`, { id: FORGED, inputs: inputs() })).status, 200);
      assert.equal((await postJson(`${p.url}/v2/models/simple/infer`, { id: 'named', inputs: inputs(FORGED) })).status, 400);
      assert.ok(isClientError((await postJson(`${p.url}/v2/models/${encodeURIComponent(FORGED)}/infer`, { inputs: inputs() })).status));
      // gRPC: a forged request id.
      const client = connect(grpcPort);
      try {
        const raw = [int32Bytes(new Array(16).fill(1)), int32Bytes(new Array(16).fill(2))];
        const grpcInputs = [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 16] }, { name: 'INPUT1', datatype: 'INT32', shape: [1, 16] }];
        await unary(client, 'ModelInfer', { model_name: 'simple', id: FORGED, inputs: grpcInputs, raw_input_contents: raw });
        await failure(unary(client, 'ModelInfer', { model_name: 'simple', id: 'g', inputs: [{ ...grpcInputs[0], name: FORGED }, grpcInputs[1]], raw_input_contents: raw }));
      } finally {
        client.close();
      }
      // OpenAI: a completion whose prompt and stop words are the client's.
      const c = await postJson(`http://127.0.0.1:${openaiPort}/v1/completions`, { model: 'tiny_llm', prompt: FORGED, max_tokens: 1, stop: [FORGED] });
      assert.equal(c.status, 200);
      assert.ok(isClientError((await postJson(`http://127.0.0.1:${openaiPort}/v1/completions`, { model: FORGED, prompt: 'hi' })).status));
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
    const out = p.output();
    const lines = out.split('\n').filter((l) => l !== '');
    // A record of the server's own: its level, time, and the server's pid (the forged one says 1).
    const RECORD = new RegExp(`^[IWEV]\\d{4} \\d\\d:\\d\\d:\\d\\d\\.\\d{6} ${p.child.pid} [^\\]\\s]+\\] `);
    for (const line of lines) assert.match(line, RECORD, `a line that is not a record of its own:\n${JSON.stringify(line)}`);
    assert.doesNotMatch(out, /[\u001b\r\u2028\u0085]/, 'control characters reach the log raw');
    // The forged text did reach the log, escaped, from the HTTP and gRPC request logs at least.
    const logged = lines.filter((l) => l.includes('forged.cc:1]'));
    assert.ok(logged.length >= 3, `the forged text was logged ${logged.length} time(s):\n${out}`);
    for (const l of logged) assert.ok(l.includes('\\u001b[2J'), l);
    if (escape === '1') assert.ok(lines.every((l) => /\] ".*"$/.test(l)), 'every message is a JSON string');
    else assert.ok(lines.some((l) => /\] Started HTTPService at /.test(l)), 'messages are unquoted with escaping off');
  });
}
