import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isNereidError } from '../../src/errors.js';
import {
  autoCompleteBackendFields, modelConfigFromJson, modelConfigToJson, normalizeModelConfig, parseModelConfig,
  printModelConfig, validateModelConfig, type DirEntry, type ModelConfig,
} from '../../src/config/index.js';
import { FIXTURES } from '../helpers/paths.js';

// Real config.pbtxt files from Triton's repositories, copied into test/fixtures/config-corpus (its README says
// where each comes from and what `expect` means).
const CORPUS = join(FIXTURES, 'config-corpus');

interface Row { file: string; originalPath: string; expect: string }

function readIndex(): Row[] {
  const lines = readFileSync(join(CORPUS, 'INDEX.tsv'), 'utf8').trim().split('\n').slice(1);
  return lines.map((l) => {
    const [file, , , originalPath, expect] = l.split('\t');
    return { file: file!, originalPath: originalPath!, expect: expect! };
  });
}

const ROWS = readIndex();

test('corpus: the copy in the repository holds every file of its index', () => {
  assert.deepEqual([ROWS.length, ROWS.filter((r) => r.expect === 'valid').length], [399, 251]);
  for (const row of ROWS) assert.ok(existsSync(join(CORPUS, row.file)), row.file);
});

/**
 * Configs that give neither backend nor platform nor file name: core picks the backend from the files in the
 * model's first version folder, which the corpus does not carry. These are the files those folders hold in
 * the source repositories (the qa folder names say which backend each test model is for).
 */
const VERSION_FILES: [RegExp, DirEntry][] = [
  [/autofill_noplatform_success\/onnx\//, { name: 'model.onnx', isDirectory: false }],
  [/autofill_noplatform_success\/python\//, { name: 'model.py', isDirectory: false }],
  [/autofill_noplatform_success\/pytorch\//, { name: 'model.pt', isDirectory: false }],
  [/autofill_noplatform_success\/tensorrt\//, { name: 'model.plan', isDirectory: false }],
  [/autofill_noplatform_success\/openvino\//, { name: 'model.xml', isDirectory: false }],
  [/^qa\/python_models\//, { name: 'model.py', isDirectory: false }],
  [/bert_base_tf_(cpu|gpu)\//, { name: 'model.savedmodel', isDirectory: true }],
  [/Llava1\.5\/model_repository\/vision_encoder\//, { name: 'model.py', isDirectory: false }],
];

/**
 * `valid` files that are not, on their own, a config Triton loads; each is still parsed, and each is checked
 * to fail the way Triton fails (or is parsed only, when Triton never validates the file as it stands).
 */
const NOT_STANDALONE: Record<string, { reason: string; error?: RegExp }> = {
  'qa/L0_response_cache/models/decoupled_cache/config.pbtxt': {
    reason: 'L0_response_cache/test.sh checks that this decoupled model with the cache enabled FAILS to load',
    error: /Response Cache does not currently support model decoupled_cache with 'decoupled' transaction policy/,
  },
  'Feature_Guide/Data_Pipelines/model_repository/ensemble_model/1/config.pbtxt': {
    reason: 'sits inside version folder 1/, which Triton never reads a config from; alone it lacks platform: "ensemble"',
    error: /Could not determine backend for model '1'/,
  },
  // autofill_noplatform_success models whose config leaves an input or output incomplete on purpose: the
  // backend's own auto-complete (TensorRT, Python `auto_complete_config`) fills it in from the model file,
  // which runs before validation in Triton and is absent here.
  'qa/L0_model_config/autofill_noplatform_success/python/incomplete_output/config.pbtxt': {
    reason: 'the model.py auto_complete_config supplies the missing output dims',
    error: /model output 'OUTPUT0' must specify 'dims'/,
  },
  'qa/L0_model_config/autofill_noplatform_success/tensorrt/hint_for_no_batch/config.pbtxt': {
    reason: 'the TensorRT backend fills the input data types from the plan',
    error: /model input '[^']+' must specify 'data_type'/,
  },
  'qa/L0_model_config/autofill_noplatform_success/tensorrt/incomplete_input/config.pbtxt': {
    reason: 'the TensorRT backend fills the input dims from the plan',
    error: /model input 'INPUT0' must specify 'dims'/,
  },
  'qa/L0_model_config/autofill_noplatform_success/tensorrt/incomplete_output/config.pbtxt': {
    reason: 'the TensorRT backend fills the output dims from the plan',
    error: /model output 'OUTPUT0' must specify 'dims'/,
  },
  'qa/L0_triton_repo_agent/models/chain_relocation/config.pbtxt': {
    reason: 'only names repository agents; the relocation agent swaps in the real model folder and config before load',
  },
  'qa/L0_triton_repo_agent/models/relocation_sanity_check/config.pbtxt': {
    reason: 'only names repository agents, and the L0 test expects its agent to refuse it',
  },
};

function versionFiles(originalPath: string): DirEntry[] {
  return VERSION_FILES.filter(([re]) => re.test(originalPath)).map(([, e]) => e);
}

/** The model folder name: the parent of config.pbtxt; other file names are templates named by their config. */
function modelDirName(row: Row, cfg: ModelConfig): string {
  const parts = row.originalPath.split('/');
  return parts[parts.length - 1] === 'config.pbtxt' ? parts[parts.length - 2]! : cfg.name;
}

function prepare(cfg: ModelConfig, row: Row, modelName: string): void {
  autoCompleteBackendFields(cfg, versionFiles(row.originalPath), modelName);
  normalizeModelConfig(cfg, { modelName });
  validateModelConfig(cfg, { modelName });
}

test('corpus: every `valid` config parses, autofills, normalizes, validates and round-trips', () => {
  const started = performance.now();
  let parsed = 0;
  let validated = 0;
  let fragments = 0;
  let renamed = 0;
  const failures: string[] = [];
  for (const row of ROWS.filter((r) => r.expect === 'valid')) {
    const text = readFileSync(join(CORPUS, row.file), 'utf8');
    const cfg = parseModelConfig(text, basename(row.originalPath));
    parsed++;
    assert.deepEqual(parseModelConfig(printModelConfig(cfg), 'printed.pbtxt'), cfg, row.file);
    // partial.pbtxt files are fragments the qa scripts append to a base config: parse only (corpus README).
    if (basename(row.originalPath) === 'partial.pbtxt') { fragments++; continue; }
    let modelName = modelDirName(row, cfg);
    // Triton's own scripts and guides copy some of these files into a folder named after their `name:`
    // (qa/python_models/*, examples/instance_kind, Quick_Deploy/*). Under the folder they sit in here, the
    // name rule must fire; under their own name they must pass.
    if (cfg.name && cfg.name !== modelName && !NOT_STANDALONE[row.originalPath]) {
      const copy = structuredClone(cfg);
      assert.throws(() => prepare(copy, row, modelName), /directory name must equal model name/);
      modelName = cfg.name;
      renamed++;
    }
    const special = NOT_STANDALONE[row.originalPath];
    try {
      prepare(cfg, row, modelName);
      if (special) failures.push(`${row.originalPath}: expected to fail (${special.reason})`);
      validated++;
    } catch (e) {
      if (!special) failures.push(`${row.originalPath}: ${(e as Error).message}`);
      else if (special.error) assert.match((e as Error).message, special.error, row.originalPath);
      continue;
    }
    assert.deepEqual(modelConfigFromJson(JSON.parse(JSON.stringify(modelConfigToJson(cfg)))), cfg, row.file);
  }
  const ms = performance.now() - started;
  console.log(`corpus: ${parsed} valid files parsed, ${validated} validated, ${fragments} fragments parsed only, ` +
    `${renamed} validated under their config name, ${Object.keys(NOT_STANDALONE).length} not standalone; ${ms.toFixed(0)} ms`);
  assert.deepEqual(failures, []);
});

test('corpus: invalid-or-template files either parse or fail with a file:line:col NereidError', () => {
  let parsed = 0;
  let rejected = 0;
  const started = performance.now();
  for (const row of ROWS.filter((r) => r.expect !== 'valid')) {
    const file = basename(row.originalPath);
    try {
      parseModelConfig(readFileSync(join(CORPUS, row.file), 'utf8'), file);
      parsed++;
    } catch (e) {
      assert.ok(isNereidError(e), `${row.file}: ${String(e)}`);
      assert.equal(e.code, 'INVALID_ARG');
      assert.match(e.message, new RegExp(`^${file.replace(/\./g, '\\.')}:\\d+:\\d+: `), row.file);
      rejected++;
    }
  }
  console.log(`corpus: ${parsed + rejected} invalid-or-template files: ${parsed} parse, ${rejected} rejected by the parser; ` +
    `${(performance.now() - started).toFixed(0)} ms`);
});
