#!/usr/bin/env node
// Builds the runtime tree: everything `nereid serve` needs to run and nothing else, in one folder that the
// container image copies as its last layer. Run it after `npm ci` (which builds dist/ and the native addons).
//
//   node scripts/runtime-tree.mjs --out <dir> [--examples] [--platform linux-x64]
//
// What goes in: bin/, dist/src/ (without declarations and source maps), proto/, console/ (the web console's files), python/ (the Python backend's
// stub, used only when the image has a Python), the native addons, a package.json without scripts or
// dev dependencies, and the production dependencies, found by walking `dependencies`, `optionalDependencies`
// and required peers from the package (optional peers such as node-llama-cpp's typescript stay out). Then:
// - onnxruntime-node keeps only the binaries of the target platform (the package ships five platforms);
// - node-llama-cpp keeps only its prebuilt CPU binaries (@node-llama-cpp/<platform>) and drops the llama.cpp
//   source bundle and addon sources it needs only to build from source, which the server never does
//   (src/backends/llamacpp/engine.ts asks for build: 'never');
// - every package loses its type declarations, source maps, TypeScript sources, markdown (licences stay) and
//   its test, docs and example folders.
// --examples adds examples/model_repository as examples/model_repository.
// Prints the tree's size in bytes as the last line ("size <bytes>").
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function parseArgs(argv) {
  const out = { dir: undefined, examples: false, platform: `${process.platform}-${process.arch}` };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') out.dir = argv[++i];
    else if (a === '--examples') out.examples = true;
    else if (a === '--platform') out.platform = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  if (!out.dir) throw new Error('usage: runtime-tree.mjs --out <dir> [--examples] [--platform linux-x64]');
  return out;
}

const readJson = (p) => JSON.parse(readFileSync(p, 'utf8'));

/** The folder Node would load `name` from when required from a file in `fromDir` (node_modules lookup). */
function resolvePackage(name, fromDir) {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT || dirname(dir) === dir) return undefined;
  }
}

/** Every package folder the production code can load, starting from the root package's dependencies. */
function productionPackages() {
  const found = new Set();
  const queue = [ROOT];
  while (queue.length > 0) {
    const dir = queue.pop();
    const pkg = readJson(join(dir, 'package.json'));
    const optionalPeers = new Set(Object.entries(pkg.peerDependenciesMeta ?? {}).filter(([, m]) => m.optional).map(([n]) => n));
    const names = [
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.optionalDependencies ?? {}),
      ...Object.keys(pkg.peerDependencies ?? {}).filter((n) => !optionalPeers.has(n)),
    ];
    for (const name of names) {
      const at = resolvePackage(name, dir);
      if (at === undefined) {
        // An optional dependency for another platform is simply not installed.
        if (name in (pkg.optionalDependencies ?? {})) continue;
        throw new Error(`${name}, a dependency of ${relative(ROOT, dir) || 'the package'}, is not installed: run npm ci first`);
      }
      // The overrides' stand-ins for node-llama-cpp's other builds are links out of node_modules: not code.
      if (!realpathSync(at).startsWith(join(ROOT, 'node_modules'))) continue;
      if (found.has(at)) continue;
      found.add(at);
      queue.push(at);
    }
  }
  return [...found].sort();
}

const DROP_FILE = [/\.d\.[cm]?ts$/, /\.map$/, /(?<!\.d)\.[cm]?ts$/, /\.tsbuildinfo$/, /^(?!licen[cs]e|notice|copying).*\.md$/i];
const DROP_DIR = new Set(['test', 'tests', '__tests__', 'docs', 'doc', 'example', 'examples', 'benchmark', 'benchmarks', '.github', 'coverage']);

/** Copy filter for a package: no declarations, maps, sources, markdown, or test/docs/example folders. */
function packageFilter(pkgDir) {
  return (src) => {
    const rel = relative(pkgDir, src);
    if (rel === '') return true;
    const name = rel.split(sep).pop();
    // Only the package's own top-level folders: a nested folder named "test" may be code (e.g. a module
    // called test.js lives in lib/, not lib/test/, but nothing guarantees the reverse).
    if (!rel.includes(sep) && DROP_DIR.has(name.toLowerCase()) && lstatSync(src).isDirectory()) return false;
    if (lstatSync(src).isDirectory()) return !(name === 'node_modules');
    return !DROP_FILE.some((r) => r.test(name));
  };
}

/** Package-specific pruning, by package name, after the copy. */
function prunePackage(name, dir, platform) {
  if (name === 'onnxruntime-node') {
    const [os, arch] = platform.split('-');
    const napi = join(dir, 'bin');
    for (const v of existsSync(napi) ? readdirSync(napi) : []) {
      for (const o of readdirSync(join(napi, v))) {
        if (o !== os) rmSync(join(napi, v, o), { recursive: true });
        else for (const a of readdirSync(join(napi, v, o))) if (a !== arch) rmSync(join(napi, v, o, a), { recursive: true });
      }
    }
    rmSync(join(dir, 'script'), { recursive: true, force: true }); // the install script, which the image never runs
  }
  if (name === 'node-llama-cpp') {
    // Only what a build from source needs: the llama.cpp source bundle, the addon's C++ and the CMake files.
    for (const p of ['gitRelease.bundle', 'addon', 'cmake', 'toolchains', 'xpack', 'patches', 'CMakeLists.txt']) {
      rmSync(join(dir, 'llama', p), { recursive: true, force: true });
    }
  }
}

function packageName(dir) {
  return readJson(join(dir, 'package.json')).name;
}

function treeSize(dir) {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += treeSize(p);
    else if (e.isFile()) total += statSync(p).size;
  }
  return total;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const out = args.dir;
  if (!existsSync(join(ROOT, 'dist', 'src', 'cli', 'main.js'))) throw new Error('dist/ is not built: run npm ci (or npm run build) first');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  const own = packageFilter(ROOT);
  cpSync(join(ROOT, 'bin'), join(out, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'dist', 'src'), join(out, 'dist', 'src'), { recursive: true, filter: own });
  cpSync(join(ROOT, 'proto'), join(out, 'proto'), { recursive: true });
  cpSync(join(ROOT, 'console'), join(out, 'console'), { recursive: true });
  cpSync(join(ROOT, 'python'), join(out, 'python'), { recursive: true, filter: (p) => !p.includes('__pycache__') });
  for (const addon of ['nereid_shm.node', 'nereid_exit.node']) {
    const from = join(ROOT, 'build', 'Release', addon);
    // The server runs without them (slower shared memory, a slower forced exit); say so rather than fail.
    if (existsSync(from)) cpSync(from, join(out, 'build', 'Release', addon));
    else process.stderr.write(`note: ${addon} is not built; the tree goes without it\n`);
  }
  const pkg = readJson(join(ROOT, 'package.json'));
  const slim = {
    name: pkg.name, version: pkg.version, description: pkg.description, license: pkg.license, type: pkg.type,
    engines: pkg.engines, main: pkg.main, exports: pkg.exports, bin: pkg.bin, dependencies: pkg.dependencies,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(slim, null, 2)}\n`);
  for (const f of ['LICENSE', 'NOTICE']) if (existsSync(join(ROOT, f))) cpSync(join(ROOT, f), join(out, f));

  for (const dir of productionPackages()) {
    const to = join(out, relative(ROOT, dir));
    cpSync(dir, to, { recursive: true, filter: packageFilter(dir) });
    prunePackage(packageName(dir), to, args.platform);
  }
  if (args.examples) cpSync(join(ROOT, 'examples', 'model_repository'), join(out, 'examples', 'model_repository'), { recursive: true });
  process.stdout.write(`size ${treeSize(out)}\n`);
}

try {
  main();
} catch (e) {
  process.stderr.write(`runtime-tree: ${e.message}\n`);
  process.exit(1);
}
