import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseModelConfig } from '../../src/config/textformat.js';
import { InferenceServer } from '../../src/server/inference-server.js';
import { EXAMPLES, ROOT } from '../helpers/paths.js';
import { spawnServer, type ServerProcess } from '../helpers/server.js';
import { pythonSkip } from '../backends/python/helpers.js';

// Every fenced code block of README.md and of the pages in docs/ is run as a newcomer would run it: shell
// blocks with bash against a server started the way the block (or the quick start) says, Python with
// /usr/bin/python3, JavaScript and TypeScript with node, config text through the config parser. Ports are free
// ones instead of 8000, 8001 and 9000. A block that cannot run in a test is listed below with the reason; a
// block neither run nor listed fails, so a new snippet cannot go untried.

interface Block { file: string; line: number; lang: string; code: string }

/** Blocks that are not run, by a piece of their text, and why. */
const NOT_RUN: { has: string; why: string }[] = [
  { has: 'npm ci && npm start', why: 'installs, then serves until stopped: the other blocks run against the server it starts' },
  { has: 'npm ci && npm test', why: 'the test suite itself' },
  { has: 'npm start -- --http-port 9000 --log-verbose 1', why: 'serves until stopped on a fixed port; both flags are tested in test/cli' },
  { has: '--model-repository /path/to/models', why: 'a placeholder path; the flags are tested in test/cli' },
  { has: 'scrape_configs:', why: "Prometheus's config, not Nereid's; test/frontends/metrics/prometheus.test.ts scrapes with one like it" },
  { has: 'llama_vllm/generate_stream', why: 'needs a vLLM engine at http://vllm:8000' },
  { has: 'name: "llama_vllm_managed"', why: 'starts vLLM, which needs its GPU build; test/backends/openai/managed-engine.test.ts runs the llama-server preset' },
  { has: 'name: "qwen_sglang_managed"', why: 'starts SGLang, which needs its GPU build; test/backends/openai/managed-engine.test.ts runs the llama-server preset' },
  { has: 'docker build -f deploy/Dockerfile', why: 'no container engine on the test machines; test/deploy/dockerfile.test.ts checks the Dockerfile and test/scripts/runtime-tree.test.ts serves its runtime tree' },
  { has: 'kubectl apply', why: 'needs a Kubernetes cluster; test/deploy/kubernetes.test.ts renders and validates every kustomization' },
  { has: 'npx nereid perf -m simple --concurrency-range 1:8:1', why: 'sweeps that measure for minutes against the default ports (gRPC included); test/tools/perf/perf-command.test.ts runs each of these modes with short windows' },
  { has: 'npx nereid analyze --model-repository examples/model_repository', why: 'a search that measures for minutes; test/tools/analyze/analyze-command.test.ts runs brute and quick searches with tiny sweeps' },
  { has: 'option httpchk GET /v2/health/ready', why: "HAProxy's config; test/server/replicas.test.ts runs HAProxy with one like it" },
  { has: '--sequence-state-store redis://127.0.0.1:6379/1', why: 'starts Redis, three replicas and HAProxy on fixed ports; test/server/replicas.test.ts does the same on free ports' },
  { has: 'step 5 true s42-1', why: 'needs the three replicas behind HAProxy of the block above' },
  { has: 'newName: registry.example.com/nereid', why: "a reader's own overlay, rendered the same way by kubectl kustomize" },
  { has: 'openssl req -x509 -newkey ec', why: 'serves until stopped, under a host name of the reader\'s; test/frontends/http/tls.test.ts makes a certificate with openssl and serves HTTPS to curl the same way' },
  { has: 'npx nereid keys add team-a', why: "appends a new key's line to the reader's key file on each run; test/frontends/api-keys.test.ts runs 'nereid keys add' and serves with the file it writes" },
  { has: "r.register('mybackend'", why: 'one line of src/backends/registry.ts, not a program; the block after it registers a backend and serves with it' },
];

function markdownBlocks(file: string, text: string): Block[] {
  const out: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    out.push({ file, line: i + 1, lang: open[2]!, code: body.join('\n') });
    i = j;
  }
  return out;
}

const servers = new Map<string, Promise<{ p: ServerProcess; ports: Record<string, number> }>>();
after(async () => {
  for (const s of servers.values()) {
    const { p } = await s;
    p.child.kill('SIGTERM');
    await p.exited;
  }
});

/** `nereid serve` with these flags, started once; 8000, 8001 and 9000 of the README become free ports. */
function server(flags: string[]): Promise<{ p: ServerProcess; ports: Record<string, number> }> {
  const key = flags.join(' ');
  if (!servers.has(key)) {
    servers.set(key, (async () => {
      const p = await spawnServer(flags.map((f) => f.replace(/^--(openai|grpc)-port=\d+$/, '--$1-port=0')));
      const port = (re: RegExp): number => Number(re.exec(p.output())?.[1] ?? 0);
      const ports: Record<string, number> = { 8000: Number(new URL(p.url).port) };
      for (let i = 0; i < 400 && ((flags.some((f) => f.startsWith('--openai-port')) && !port(/OpenAI-compatible service at [^:]+:(\d+)/)) ||
        (flags.includes('--allow-grpc=true') && !port(/GRPCInferenceService at [^:]+:(\d+)/))); i++) await new Promise((r) => setTimeout(r, 50));
      ports[9000] = port(/OpenAI-compatible service at [^:]+:(\d+)/);
      ports[8001] = port(/GRPCInferenceService at [^:]+:(\d+)/);
      return { p, ports };
    })());
  }
  return servers.get(key)!;
}

const withPorts = (code: string, ports: Record<string, number>): string =>
  code.replace(/localhost:(8000|8001|9000)/g, (_, p: string) => `127.0.0.1:${ports[p]}`);

/** The server flags a shell block's first line asks for (`npm start -- …`, `npx nereid serve …`), and the rest. */
function shellServer(code: string): { flags: string[]; script: string } {
  const [first, ...rest] = code.split('\n');
  const npmStart = /^npm start(?: -- (.*))?$/.exec(first!);
  const npx = /^npx nereid serve (.*)$/.exec(first!);
  const words = (s: string | undefined): string[] => (s ?? '').split(/\s+/).filter(Boolean);
  const pairs = (ws: string[]): string[] => ws.flatMap((w, i) => (w.startsWith('--') && !w.includes('=') && ws[i + 1] && !ws[i + 1]!.startsWith('--') ? [`${w}=${ws[i + 1]}`] : w.startsWith('--') ? [w] : []));
  if (npmStart) return { flags: ['--model-repository=examples/model_repository', ...pairs(words(npmStart[1]))], script: rest.join('\n') };
  if (npx) return { flags: pairs(words(npx[1])), script: rest.join('\n') };
  return { flags: ['--model-repository=examples/model_repository'], script: code };
}

function run(cmd: string, args: string[], opts: { cwd?: string; input?: string } = {}): void {
  const r = spawnSync(cmd, args, { cwd: opts.cwd ?? ROOT, input: opts.input, encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, `${cmd} exited ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
}

async function runShell(b: Block): Promise<void> {
  const { flags, script } = shellServer(b.code);
  const { ports } = await server(flags);
  // curl fails on an HTTP error, as a reader would notice one.
  run('bash', ['-c', `set -eo pipefail\ncurl() { command curl --silent --show-error --fail-with-body "$@"; }\n${withPorts(script, ports)}`]);
}

async function runPython(b: Block): Promise<void> {
  if (b.code.includes('grpc_service_pb2')) {
    const { ports } = await server(['--model-repository=examples/model_repository', '--allow-grpc=true', '--grpc-address=127.0.0.1', '--grpc-port=8001']);
    await mkdir(join(ROOT, '.scratch'), { recursive: true });
    const dir = await mkdtemp(join(ROOT, '.scratch', 'readme-grpc-'));
    try {
      run('/usr/bin/python3', ['-m', 'grpc_tools.protoc', `-I${join(ROOT, 'proto')}`, `--python_out=${dir}`, `--grpc_python_out=${dir}`, 'grpc_service.proto', 'model_config.proto', 'health.proto']);
      run('/usr/bin/python3', ['-'], { cwd: dir, input: withPorts(b.code, ports) });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    return;
  }
  const shm = b.code.includes('systemsharedmemory');
  const { ports } = await server(['--model-repository=examples/model_repository', ...(shm ? ['--allow-client-shm=true'] : [])]);
  run('/usr/bin/python3', ['-'], { input: withPorts(b.code, ports) });
}

/** What a fragment of the Node API section refers to but does not define, by the model it calls. */
const PRELUDES: Record<string, string> = {
  repeat_int32: `const inputs = [
  { name: 'IN', datatype: 'INT32', shape: [3], data: new Uint8Array(new Int32Array([4, 5, 6]).buffer) },
  { name: 'DELAY', datatype: 'UINT32', shape: [3], data: new Uint8Array(new Uint32Array(3).buffer) },
  { name: 'WAIT', datatype: 'UINT32', shape: [1], data: new Uint8Array(new Uint32Array(1).buffer) },
];`,
  add_sub: `const inputs = ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) }));`,
};

async function runNode(b: Block): Promise<void> {
  // Inside the package, so that `import … from 'nereid'` resolves to it as it does for an application.
  await mkdir(join(ROOT, '.scratch'), { recursive: true });
  const dir = await mkdtemp(join(ROOT, '.scratch', 'readme-node-'));
  try {
    let program = b.code;
    if (!b.code.includes('InferenceServer.create')) {
      const model = /model: '(\w+)'/.exec(b.code)?.[1] ?? '';
      assert.ok(PRELUDES[model], `no prelude for a fragment calling model '${model}'`);
      program = `import { InferenceServer } from 'nereid';
const server = await InferenceServer.create({ modelRepositories: ['${EXAMPLES}', '${join(ROOT, 'examples', 'python_repository')}'],
  modelControlMode: 'explicit', loadModels: ['${model}'] });
${PRELUDES[model]}
${b.code}
await server.close();`;
    }
    await symlink(EXAMPLES, join(dir, 'models'));
    await writeFile(join(dir, 'snippet.mjs'), program);
    run(process.execPath, ['snippet.mjs'], { cwd: dir });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The JavaScript model of the README: loaded as a model and asked to add. */
async function runJsModel(b: Block): Promise<void> {
  await mkdir(join(ROOT, '.scratch'), { recursive: true });
  const repo = await mkdtemp(join(ROOT, '.scratch', 'readme-model-'));
  try {
    await mkdir(join(repo, 'add_js', '1'), { recursive: true });
    await writeFile(join(repo, 'add_js', '1', 'model.mjs'), b.code);
    await writeFile(join(repo, 'add_js', 'config.pbtxt'), `backend: "javascript"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 4 ] }, { name: "INPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 4 ] } ]
`);
    const s = await InferenceServer.create({ modelRepositories: [repo] });
    try {
      const t = (name: string, v: number[]) => ({ name, datatype: 'INT32' as const, shape: [4], data: new Uint8Array(new Int32Array(v).buffer) });
      const r = await s.infer({ model: 'add_js', inputs: [t('INPUT0', [1, 2, 3, 4]), t('INPUT1', [10, 20, 30, 40])] });
      assert.deepEqual([...new Int32Array((r.outputs[0]!.data as Uint8Array).slice().buffer)], [11, 22, 33, 44]);
    } finally {
      await s.close();
    }
  } finally {
    await rm(repo, { recursive: true, force: true });
  }
}

const pages = ['README.md', ...(await readdir(join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const blocks = (await Promise.all(pages.map(async (f) => markdownBlocks(f, await readFile(join(ROOT, f), 'utf8'))))).flat();
const noPython = pythonSkip('numpy');
const noGrpcTools = pythonSkip('grpc_tools, grpc');

for (const b of blocks) {
  const listed = NOT_RUN.find((n) => b.code.includes(n.has));
  const name = `${b.file} line ${b.line} (${b.lang || 'text'}): ${b.code.split('\n')[0]!.slice(0, 60)}`;
  if (listed) {
    test(name, { skip: `not run: ${listed.why}` }, () => undefined);
    continue;
  }
  if (b.lang === 'sh') test(name, () => runShell(b));
  else if (b.lang === 'python') test(name, { skip: b.code.includes('grpc') ? noGrpcTools : noPython }, () => runPython(b));
  else if (b.lang === 'ts') test(name, () => runNode(b));
  else if (b.lang === 'js' && /export default class/.test(b.code)) test(name, () => runJsModel(b));
  // Config text, whole or a fragment: what the parser accepts is what a reader can paste into config.pbtxt.
  else if (b.lang === '') test(name, () => void parseModelConfig(b.code, b.file));
  else test(name, () => assert.fail(`a ${b.lang} block that is neither run nor listed in NOT_RUN`));
}

test('every listed block still exists', () => {
  for (const n of NOT_RUN) assert.ok(blocks.some((b) => b.code.includes(n.has)), `NOT_RUN lists '${n.has}', which is no longer in README.md or docs/`);
});
