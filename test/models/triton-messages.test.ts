import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { EXAMPLES, FIXTURES } from '../helpers/paths.js';
import { tempRepository } from '../helpers/server.js';
import { startBothFrontends, type BothFrontends } from '../helpers/frontends.js';
import { assertDistinctRefusals, assertTritonWords } from '../helpers/triton-messages.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { createLogger } from '../../src/observability/logger.js';
import { MODELS_MESSAGES, type ModelsContext } from './triton-messages.js';

// Each refusal of the repository, model control, metadata and settings endpoints against real servers, as a
// client sees it over HTTP and over gRPC: the message must hold Triton's words.

const repos: { dir: string; remove(): Promise<void> }[] = [];
const servers: BothFrontends[] = [];
let ctx: ModelsContext;

const SIMPLE = join(EXAMPLES, 'simple');
const BROKEN = join(FIXTURES, 'broken');

/** `simple` under another name: its folder and the name in its config. */
async function renamedSimple(repo: string, name: string): Promise<void> {
  const config = await readFile(join(SIMPLE, 'config.pbtxt'), 'utf8');
  await writeFile(join(repo, name, 'config.pbtxt'), config.replace('name: "simple"', `name: "${name}"`));
}

const INT32_IO = `input [ { name: "IN0" data_type: TYPE_INT32 dims: [ 16 ] }, { name: "IN1" data_type: TYPE_INT32 dims: [ 16 ] } ]
output [ { name: "OUT0" data_type: TYPE_INT32 dims: [ 16 ] } ]`;

/** An ensemble of one step on `model` (version `version`), with a version folder as Triton wants one. */
async function ensemble(repo: string, name: string, body: string): Promise<void> {
  await mkdir(join(repo, name, '1'), { recursive: true });
  await writeFile(join(repo, name, 'config.pbtxt'), `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: 8\n${body}\n`);
}

const simpleStep = (model: string, version: number) => `${INT32_IO}
ensemble_scheduling { step [ { model_name: "${model}" model_version: ${version}
  input_map { key: "INPUT0" value: "IN0" } input_map { key: "INPUT1" value: "IN1" } output_map { key: "OUTPUT0" value: "OUT0" } } ] }`;

const FP32_IO = `input [ { name: "IN0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`;

before(async () => {
  const main = await tempRepository([
    { from: SIMPLE }, { from: SIMPLE, name: 'gone' }, { from: SIMPLE, name: 'dup' },
    { from: join(BROKEN, 'bad_onnx') }, { from: join(BROKEN, 'bad_config') },
  ]);
  const other = await tempRepository([{ from: SIMPLE, name: 'dup' }]);
  repos.push(main, other);
  await renamedSimple(main.dir, 'gone');
  await mkdir(join(main.dir, 'noversions'));
  await writeFile(join(main.dir, 'noversions', 'config.pbtxt'), `name: "noversions"\nbackend: "onnxruntime"\nmax_batch_size: 8\n${INT32_IO}\n`);
  await ensemble(main.dir, 'ens_missing', simpleStep('no_such_model', -1));
  await ensemble(main.dir, 'ens_version', simpleStep('simple', 7));
  await ensemble(main.dir, 'ens_bad', `${FP32_IO}
ensemble_scheduling { step [ { model_name: "bad_onnx" model_version: -1 input_map { key: "INPUT0" value: "IN0" } output_map { key: "OUTPUT0" value: "OUT0" } } ] }`);

  const plain = await tempRepository([{ from: SIMPLE }]);
  const nsA = await tempRepository([{ from: SIMPLE }]);
  const nsB = await tempRepository([{ from: SIMPLE }]);
  const startup = await tempRepository([{ from: join(BROKEN, 'bad_onnx') }]);
  repos.push(plain, nsA, nsB, startup);

  const explicit = await startBothFrontends({ modelRepositories: [main.dir, other.dir], modelControlMode: 'explicit' });
  const none = await startBothFrontends({ modelRepositories: [plain.dir] });
  const namespaced = await startBothFrontends({ modelRepositories: [nsA.dir, nsB.dir], modelNamespacing: true });
  servers.push(explicit, none, namespaced);
  ctx = {
    explicit,
    none,
    namespaced,
    startupFailure: async () => {
      const logger = createLogger({ info: false, warning: false, error: false, verbose: 0, format: 'default', file: '' });
      try {
        const s = await InferenceServer.create({ modelRepositories: [startup.dir] }, { logger });
        await s.close(5);
      } catch (e) {
        return (e as Error).message;
      }
      assert.fail('the server started although a model failed to load');
    },
  };
});
after(async () => {
  for (const s of servers) await s.close();
  for (const r of repos) await r.remove();
});

test('the table names each refusal once', () => assertDistinctRefusals(MODELS_MESSAGES));

for (const row of MODELS_MESSAGES) {
  test(row.refusal, async () => {
    if (row.http) assertTritonWords(row, `HTTP: ${await row.http(ctx)}`);
    if (row.grpc) assertTritonWords(row, `gRPC: ${await row.grpc(ctx)}`);
  });
}
