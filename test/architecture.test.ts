import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { ROOT } from './helpers/paths.js';

// The layer rules of docs/architecture.md, read from every src/ file's imports so that the map cannot drift.
// The tables below are the rules; the doc shows the same tables, and the last test checks that it does.

/**
 * Which layer may import which, top to bottom. A file's layer is its folder under src/, except the few files
 * named in UNITS. Every layer may also import SHARED.
 */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  cli: ['package', 'tools', 'frontends', 'server', 'models', 'scheduler', 'backends', 'repository', 'cache', 'sharedmemory', 'observability', 'config', 'inference', 'tensor'],
  package: ['frontends', 'server', 'models', 'backends', 'inference', 'tensor'],
  tools: ['config', 'tensor'],
  frontends: ['server', 'inference', 'tensor'],
  server: ['models', 'scheduler', 'backends', 'repository', 'cache', 'sharedmemory', 'observability', 'config', 'inference', 'tensor'],
  models: ['scheduler', 'backends', 'repository', 'cache', 'observability', 'config', 'inference', 'tensor'],
  scheduler: ['backends', 'config', 'inference', 'tensor'],
  cache: ['inference', 'tensor'],
  repository: [],
  backends: ['config', 'inference', 'tensor'],
  sharedmemory: ['inference', 'tensor'],
  observability: ['inference', 'tensor'],
  config: [],
  inference: ['tensor'],
  tensor: [],
  logger: [],
  errors: [],
  getopt: [],
};

/** Modules every layer may import. */
const SHARED = ['errors', 'getopt', 'logger'];

/** Files that are a unit of their own rather than part of their folder's layer. */
const UNITS: Readonly<Record<string, string>> = {
  'index.ts': 'package',
  'experimental.ts': 'package',
  'errors.ts': 'errors',
  'getopt.ts': 'getopt',
  'observability/logger.ts': 'logger',
  'observability/log-location.ts': 'logger',
};

/**
 * Folders whose subfolders are independent of one another (a backend is one folder, a protocol one frontend):
 * a subfolder imports its parent's own files, never a sibling subfolder.
 */
const INDEPENDENT_SUBFOLDERS = ['backends', 'frontends'];

/** The imports the rules above refuse, on purpose, each with its reason in docs/architecture.md. Exact pairs. */
const EXCEPTIONS: readonly string[] = [
  // The Python backend's request/response arena is mapped by the one shared-memory addon.
  'backends/python/shm.ts -> sharedmemory/native.ts',
  // PyTorch models run on the Python backend's stub, with a runner of their own.
  'backends/pytorch/backend.ts -> backends/python/backend.ts',
  // The OpenAI frontend reads bodies and parses JSON with the HTTP frontend's bounded reader and parser.
  'frontends/openai/server.ts -> frontends/http/body.ts',
  'frontends/openai/server.ts -> frontends/http/json-parse.ts',
  // The Redis sequence store connects as the Redis caches do.
  'scheduler/sequence-store-redis.ts -> cache/redis-reach.ts',
];

/**
 * Each third-party package and the one place (a file, or a folder ending in /) it may be imported from. A key
 * ending in / stands for every package of that scope. A package not listed may not be imported at all.
 */
const PACKAGES: Readonly<Record<string, readonly string[]>> = {
  '@aws-sdk/': ['repository/cloud/s3.ts'],
  '@azure/': ['repository/cloud/azure.ts'],
  '@google-cloud/storage': ['repository/cloud/gcs.ts'],
  '@opentelemetry/': ['observability/trace/otel-trace.ts'],
  'hdr-histogram-js': ['tools/perf/latency-histogram.ts'],
  'ioredis': ['cache/redis.ts', 'cache/redis-text-store.ts', 'scheduler/sequence-store-redis.ts'],
  'node-llama-cpp': ['backends/llamacpp/'],
  'onnxruntime-node': ['backends/onnxruntime/'],
  'prom-client': ['observability/metrics/'],
  'protobufjs': ['frontends/grpc/proto.ts', 'tools/perf/grpc-client.ts'],
  'undici': ['backends/openai/engine.ts', 'tools/perf/http-transport.ts'],
  'uplot': ['tools/report/html.ts'],
};

interface Import {
  readonly from: string;
  readonly specifier: string;
}

const SRC = join(ROOT, 'src');

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const toPosix = (p: string): string => p.split(sep).join('/');

/** The text with comment lines blanked (the sources' comments are whole lines: JSDoc and //). */
function withoutComments(text: string): string {
  return text.split('\n').map((l) => (/^\s*(\/\/|\/\*|\*)/.test(l) ? '' : l)).join('\n');
}

const STATIC = /^(?:import|export)\s+(?:type\s+)?(?:[\w\s{},*$]*?\s)?from\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)|\brequire(?:\.resolve)?\(\s*['"]([^'"]+)['"]|\bcreateRequire\([^()]*\)\(\s*['"]([^'"]+)['"]/g;

/** Every static import and export-from, import() and require() with a literal specifier in a source text. */
function importsOf(text: string): string[] {
  const code = withoutComments(text);
  const out: string[] = [];
  for (const re of [STATIC, DYNAMIC]) {
    for (const m of code.matchAll(re)) out.push((m[1] ?? m[2] ?? m[3])!);
  }
  return out;
}

function allImports(): Import[] {
  const out: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = toPosix(relative(SRC, file));
    for (const specifier of importsOf(readFileSync(file, 'utf8'))) out.push({ from, specifier });
  }
  return out;
}

/** A relative specifier as the src/ file it names (the sources import './x.js' for './x.ts'). */
function target(i: Import): string {
  return posix.normalize(posix.join(posix.dirname(i.from), i.specifier)).replace(/\.js$/, '.ts');
}

function layerOf(file: string): string {
  return UNITS[file] ?? file.split('/')[0]!;
}

/** backends/python/x.ts → backends/python; backends/registry.ts → undefined (the parent's own file). */
function subfolderOf(file: string): string | undefined {
  const parts = file.split('/');
  return INDEPENDENT_SUBFOLDERS.includes(parts[0]!) && parts.length > 2 ? `${parts[0]}/${parts[1]}` : undefined;
}

/** Why an import between two src/ files breaks the rules, or undefined when it keeps them. */
function refusal(from: string, to: string): string | undefined {
  const a = layerOf(from);
  const b = layerOf(to);
  if (a !== b) {
    const allowed = MAY_IMPORT[a];
    if (allowed === undefined) return `${from} is in no layer (${a})`;
    if (MAY_IMPORT[b] === undefined) return `${to} is in no layer (${b})`;
    if (!SHARED.includes(b) && !allowed.includes(b)) return `${a} may not import ${b}`;
    return undefined;
  }
  const sa = subfolderOf(from);
  const sb = subfolderOf(to);
  if (sb !== undefined && sa !== undefined && sa !== sb) return `${sa} may not import its sibling ${sb}`;
  return undefined;
}

function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function packageKey(name: string): string | undefined {
  if (PACKAGES[name] !== undefined) return name;
  const scope = `${name.split('/')[0]}/`;
  return name.startsWith('@') && PACKAGES[scope] !== undefined ? scope : undefined;
}

const within = (file: string, place: string): boolean => (place.endsWith('/') ? file.startsWith(place) : file === place);

const imports = allImports();
const relativeImports = imports.filter((i) => i.specifier.startsWith('.'));
const packageImports = imports.filter((i) => !i.specifier.startsWith('.') && !i.specifier.startsWith('node:'));

test('the scan sees the sources: hundreds of files and their static, dynamic and require() imports', () => {
  assert.ok(sourceFiles(SRC).length > 200);
  assert.ok(relativeImports.length > 700);
  assert.deepEqual(
    importsOf([
      "import { a } from './a.js';", "import type {", '  B,', "} from '../b.js';", "export * from './c.js';", "import './d.js';",
      "const e = await import('./e.js');", "createRequire(import.meta.url)('f');", "require.resolve('g/x.css');",
      "/** import { h } from 'h'; */", " * import('i')", "// import j from 'j';",
    ].join('\n')).sort(),
    ['../b.js', './a.js', './c.js', './d.js', './e.js', 'f', 'g/x.css'],
  );
});

test('every relative import names a source file under src/', () => {
  const missing = relativeImports.filter((i) => !target(i).startsWith('..') && !existsSync(join(SRC, target(i))));
  const outside = relativeImports.filter((i) => target(i).startsWith('..'));
  assert.deepEqual([...missing, ...outside].map((i) => `${i.from} -> ${i.specifier}`), []);
});

test('nothing imports upward, nor a sibling backend or frontend, except the listed exceptions', () => {
  const strays: string[] = [];
  for (const i of relativeImports) {
    const to = target(i);
    const why = refusal(i.from, to);
    if (why !== undefined && !EXCEPTIONS.includes(`${i.from} -> ${to}`)) strays.push(`${i.from} -> ${to}: ${why}`);
  }
  assert.deepEqual(strays, []);
});

test('each listed exception is still an import the rules refuse, so the list cannot rot', () => {
  const seen = new Set(relativeImports.map((i) => `${i.from} -> ${target(i)}`));
  for (const e of EXCEPTIONS) {
    const [from, to] = e.split(' -> ') as [string, string];
    assert.ok(seen.has(e), `listed exception no longer exists: ${e}`);
    assert.ok(refusal(from, to) !== undefined, `listed exception is allowed by the layer table anyway: ${e}`);
  }
});

test('the layer table has no cycle: every layer sits strictly above those it may import', () => {
  const depth = new Map<string, number>();
  const visit = (layer: string, path: readonly string[]): number => {
    assert.ok(!path.includes(layer), `cycle: ${[...path, layer].join(' -> ')}`);
    const known = depth.get(layer);
    if (known !== undefined) return known;
    const below = SHARED.includes(layer) ? MAY_IMPORT[layer]! : [...MAY_IMPORT[layer]!, ...SHARED];
    const d = 1 + Math.max(0, ...below.map((b) => visit(b, [...path, layer])));
    depth.set(layer, d);
    return d;
  };
  for (const layer of Object.keys(MAY_IMPORT)) visit(layer, []);
});

test('each third-party package is imported only from its one module, and is a runtime dependency', () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const strays: string[] = [];
  for (const i of packageImports) {
    const name = packageName(i.specifier);
    const key = packageKey(name);
    if (key === undefined) strays.push(`${i.from} imports ${name}, which has no home in the package table`);
    else if (!PACKAGES[key]!.some((place) => within(i.from, place))) strays.push(`${i.from} imports ${name}, allowed only in ${PACKAGES[key]!.join(', ')}`);
    if (pkg.dependencies[name] === undefined) strays.push(`${i.from} imports ${name}, which is not in package.json's dependencies`);
  }
  assert.deepEqual(strays, []);
});

test("each package's listed home still imports it, so the table cannot rot", () => {
  for (const [key, places] of Object.entries(PACKAGES)) {
    for (const place of places) {
      const used = packageImports.some((i) => packageKey(packageName(i.specifier)) === key && within(i.from, place));
      assert.ok(used, `${place} no longer imports ${key}`);
    }
  }
});

test('the rules refuse an upward import when one is planted', () => {
  assert.equal(refusal('tensor/bytes.ts', 'inference/request.ts'), 'tensor may not import inference');
  assert.equal(refusal('backends/onnxruntime/session.ts', 'models/manager.ts'), 'backends may not import models');
  assert.equal(refusal('frontends/http/repository.ts', 'config/index.ts'), 'frontends may not import config');
  assert.equal(refusal('backends/python/instance.ts', 'backends/onnxruntime/session.ts'), 'backends/python may not import its sibling backends/onnxruntime');
  assert.equal(refusal('tools/perf/run.ts', 'server/inference-server.ts'), 'tools may not import server');
  assert.equal(refusal('tensor/bytes.ts', 'errors.ts'), undefined);
  assert.equal(refusal('backends/python/instance.ts', 'backends/registry.ts'), undefined);
});

/** The backticked words of a markdown table cell. */
const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The rows of the table that follows `heading` in the page: each row's cells. */
function tableAfter(page: string, heading: string): string[][] {
  const lines = page.slice(page.indexOf(heading)).split('\n');
  const start = lines.findIndex((l) => /^\s*\|/.test(l));
  const rows: string[][] = [];
  for (const l of lines.slice(start + 2)) {
    if (!/^\s*\|/.test(l)) break;
    rows.push(l.trim().slice(1, -1).split(' | ').map((c) => c.trim()));
  }
  return rows;
}

test('docs/architecture.md shows the same layers, package homes and exceptions as this test', () => {
  const page = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const layers = Object.fromEntries(tableAfter(page, '## The layers').map((r) => [ticked(r[0]!)[0]!.replace(/\/$/, ''), ticked(r[2]!)]));
  const rules = Object.fromEntries(Object.entries(MAY_IMPORT).filter(([l]) => !SHARED.includes(l)));
  assert.deepEqual(layers, rules);
  const homes = Object.fromEntries(tableAfter(page, '**Each third-party package has one home**').map((r) => [ticked(r[0]!)[0]!.replace(/\*$/, ''), ticked(r[1]!)]));
  assert.deepEqual(homes, PACKAGES);
  const pairs = tableAfter(page, '### The exceptions, on purpose').flatMap((r) => {
    const [from, ...to] = ticked(r[0]!);
    return to.map((t) => `${from} -> ${t}`);
  });
  assert.deepEqual(pairs, EXCEPTIONS);
});
