import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InferenceServer } from '../../../src/server/inference-server.js';
import { startHttpFrontend } from '../../../src/frontends/http/server.js';
import type { Logger } from '../../../src/observability/logger.js';
import { postJson } from '../../helpers/http.js';
import { pythonSkip } from './helpers.js';

// Answers through the response sender of models that are not decoupled, where the request's way back is not the
// plain one: requests of one batch that answer differently, and a sequence batcher with implicit state.

const skip = pythonSkip();

const HEAD = `import threading
import time

import numpy as np
import triton_python_backend_utils as pb_utils

FINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL


def out(name, v, shape):
    return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(name, np.array(v, np.int32).reshape(shape))])
`;

const MODELS: Record<string, { config: string; model: string }> = {
  // MODE 1 answers through the sender, then returns a response as well; 2 sends twice through the sender and
  // catches the refusal; any other MODE returns MODE + 100 x the batch's size.
  answered_twice: {
    config: `max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 5000000 preferred_batch_size: [ 3 ] }
input [ { name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
    model: `${HEAD}

class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0][0])
            if mode == 1:
                request.get_response_sender().send(out("OUT", [1001], [1, 1]), flags=FINAL)
                responses.append(out("OUT", [1], [1, 1]))
            elif mode == 2:
                sender = request.get_response_sender()
                sender.send(out("OUT", [1002], [1, 1]), flags=FINAL)
                try:
                    sender.send(out("OUT", [2002], [1, 1]), flags=FINAL)
                except pb_utils.TritonModelException:
                    pass
                responses.append(None)
            else:
                responses.append(out("OUT", [mode + 100 * len(requests)], [1, 1]))
        return responses
`,
  },
  // Answers each request from a thread after execute() has returned: OUT and the next state are IN + state.
  sequence_late: {
    config: `max_batch_size: 0
sequence_batching {
  max_sequence_idle_microseconds: 5000000
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
}
input [ { name: "IN" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
    model: `${HEAD}

def later(sender, v):
    time.sleep(0.05)
    t = np.array([v], np.int32)
    sender.send(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", t), pb_utils.Tensor("ACC_OUT", t)]), flags=FINAL)


class TritonPythonModel:
    def execute(self, requests):
        for request in requests:
            v = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()[0])
            acc = int(pb_utils.get_input_tensor_by_name(request, "ACC_IN").as_numpy()[0])
            threading.Thread(target=later, args=(request.get_response_sender(), v + acc)).start()
        return [None] * len(requests)
`,
  },
};

function capturingLogger(lines: string[]): Logger {
  const at = (level: string) => (m: string): void => void lines.push(`${level} ${m}`);
  const l: Logger = {
    error: at('E'), warn: at('W'), warning: at('W'), info: at('I'), verbose: (n, m) => void lines.push(`V${n} ${m}`),
    isVerbose: () => false, child: () => l,
    settings: () => ({ log_file: '', log_info: true, log_warning: true, log_error: true, log_verbose_level: 0, log_format: 'default' }),
    update: () => undefined, close: () => Promise.resolve(),
  };
  return l;
}

async function serve(model: string, lines: string[]): Promise<{ url: string; close(): Promise<void> }> {
  const repo = await mkdtemp(join(tmpdir(), 'nereid-sender-batch-'));
  await mkdir(join(repo, model, '1'), { recursive: true });
  await writeFile(join(repo, model, 'config.pbtxt'), `name: "${model}"\nbackend: "python"\n${MODELS[model]!.config}\n`);
  await writeFile(join(repo, model, '1', 'model.py'), MODELS[model]!.model);
  const logger = capturingLogger(lines);
  const server = await InferenceServer.create({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: [model] }, { logger });
  const http = await startHttpFrontend(server, { port: 0, address: '127.0.0.1', maxInputSize: 1 << 20 }, logger);
  return {
    url: `http://127.0.0.1:${http.port}`,
    close: async () => {
      await server.close(5);
      await http.close();
      await rm(repo, { recursive: true, force: true });
    },
  };
}

// As Triton's L0_backend_python/response_sender tests: test_non_decoupled_one_response_pre_and_on_return (the
// response sent through the sender reaches the client, the one returned for the same request is refused by the
// sender and never seen), test_non_decoupled_two_response_pre_return (the second send is refused with
// "Non-decoupled model cannot send more than one response"), and test_non_decoupled_multiple_requests (requests of
// one batch answering in different ways each get their own response).
test('a request answered twice in a batch: the second answer is refused in Triton\'s words, the batch\'s other requests get theirs', { skip }, async () => {
  const lines: string[] = [];
  const s = await serve('answered_twice', lines);
  try {
    const infer = async (mode: number): Promise<number> => {
      const r = await postJson(`${s.url}/v2/models/answered_twice/infer`, { inputs: [{ name: 'MODE', shape: [1, 1], datatype: 'INT32', data: [mode] }] });
      assert.equal(r.status, 200, r.body.toString());
      return r.json().outputs[0].data[0];
    };
    // Batches of three (the batch's size is in the other requests' answers).
    assert.deepEqual(await Promise.all([infer(0), infer(1), infer(5)]), [300, 1001, 305]);
    assert.deepEqual(await Promise.all([infer(0), infer(2), infer(5)]), [300, 1002, 305]);
    const refused = lines.filter((l) => l.startsWith('E ') && l.includes('Unable to send response. Non-decoupled model cannot send more than one response.'));
    assert.equal(refused.length, 1, lines.join('\n'));
  } finally {
    await s.close();
  }
});

// python_backend's ResponseSender does not care how a request was scheduled: a sequence-batched model that is
// not decoupled may answer after execute() has returned (as response_sender_test.py's
// test_non_decoupled_one_response_post_return does for a model without a sequence batcher), and the state it
// sends with the answer is the sequence's next state.
test('a sequence-batched model with implicit state answers through its response sender after execute() returns', { skip }, async () => {
  const s = await serve('sequence_late', []);
  try {
    const step = async (v: number, start: boolean, end: boolean): Promise<number> => {
      const r = await postJson(`${s.url}/v2/models/sequence_late/infer`, {
        inputs: [{ name: 'IN', shape: [1], datatype: 'INT32', data: [v] }], parameters: { sequence_id: 7, sequence_start: start, sequence_end: end },
      });
      assert.equal(r.status, 200, r.body.toString());
      return r.json().outputs[0].data[0];
    };
    assert.equal(await step(1, true, false), 1);
    assert.equal(await step(2, false, false), 3);
    assert.equal(await step(4, false, true), 7);
  } finally {
    await s.close();
  }
});
