import { after, before, test } from 'node:test';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { failure, int32Bytes, startGrpcTestServer, unary, type GrpcTestServer } from '../../helpers/grpc.js';
import { assertDistinctRefusals, assertTritonWords } from '../../helpers/triton-messages.js';
import { pythonSkip } from './helpers.js';
import { PYTHON_REFUSALS, PYTHON_REFUSAL_MODELS, type PythonRefusal } from './triton-messages.js';

// Each Python backend refusal of the table met as a client meets it: loading a model of a repository written
// here, or one request to a loaded one, over gRPC to a real server. One server for the whole table.

const skip = pythonSkip();
let s: GrpcTestServer;
let repo: string;

before(async () => {
  if (skip) return;
  repo = await mkdtemp(join(tmpdir(), 'nereid-python-refusals-'));
  for (const [name, { config, ...files }] of Object.entries(PYTHON_REFUSAL_MODELS)) {
    await mkdir(join(repo, name, '1'), { recursive: true });
    await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"\nbackend: "python"\n${config}\n`);
    for (const [file, text] of Object.entries(files)) await writeFile(join(repo, name, '1', file), text);
  }
  const serving = [...new Set(PYTHON_REFUSALS.filter((r) => r.on !== 'load').map((r) => r.model))];
  // The server's own settings are refused when a model needs them: at its load, before any Python starts.
  s = await startGrpcTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', loadModels: serving, metrics: { cpu: false } });
});

after(async () => {
  await s?.close();
  if (repo) await rm(repo, { recursive: true, force: true });
});

const request = (model: string, mode: number) => ({
  model_name: model, inputs: [{ name: 'MODE', datatype: 'INT32', shape: [1] }], raw_input_contents: [int32Bytes([mode])],
});

/** A row about the server's settings meets them in a server of its own. */
async function loadWith(row: PythonRefusal): Promise<string> {
  const own = await startGrpcTestServer({ modelRepositories: [repo], modelControlMode: 'explicit', backendConfig: { python: { ...row.backendConfig } } });
  try {
    return (await failure(unary(own.client, 'RepositoryModelLoad', { model_name: row.model }))).details;
  } finally {
    await own.close();
  }
}

/** The refusal's message as the client reads it. */
async function meet(row: PythonRefusal): Promise<string> {
  switch (row.on) {
    case 'load':
      if (row.backendConfig) return loadWith(row);
      return (await failure(unary(s.client, 'RepositoryModelLoad', { model_name: row.model }))).details;
    case 'infer':
      return (await failure(unary(s.client, 'ModelInfer', request(row.model, row.mode!)))).details;
    case 'note': {
      await unary(s.client, 'ModelInfer', request(row.model, row.mode!));
      const r = await unary(s.client, 'ModelInfer', request(row.model, 9));
      const bytes: Buffer = r.raw_output_contents[0];
      return bytes.subarray(4, 4 + bytes.readUInt32LE(0)).toString();
    }
    case 'stream':
      return streamError(row.model, row.mode!);
  }
}

function streamError(model: string, mode: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const call = s.client.ModelStreamInfer(new grpc.Metadata());
    let message: string | undefined;
    call.on('data', (r: any) => {
      if (r.error_message) message ??= r.error_message;
    });
    call.on('error', () => {});
    call.on('status', () => (message === undefined ? reject(new Error('the stream answered no error')) : resolve(message)));
    call.write(request(model, mode));
    call.end();
  });
}

test('the table lists each refusal once', () => assertDistinctRefusals(PYTHON_REFUSALS));

for (const row of PYTHON_REFUSALS) {
  test(row.refusal, { skip }, async () => assertTritonWords(row, await meet(row)));
}
