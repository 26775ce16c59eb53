import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXAMPLES, ROOT } from '../helpers/paths.js';

// The package as a user gets it: `npm pack`, installed into a fresh project, and every entry of "exports"
// imported from there. The install is offline: the production dependencies are mirrored from this checkout's
// node_modules (hard links, or symlinks per file across file systems) so npm finds them satisfied and fetches
// nothing, and it uses a cache of its own. A mirror of real folders, not links to folders: npm prunes what it
// finds extraneous, and through a linked folder it would prune this checkout's own node_modules.

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Copies a folder as hard links (symlinks per file where the file system differs); never writes through. */
function mirror(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, e.name);
    const dst = join(to, e.name);
    if (e.isDirectory()) mirror(src, dst);
    else if (e.isSymbolicLink()) symlinkSync(readlinkSync(src), dst);
    else {
      try {
        linkSync(src, dst);
      } catch {
        symlinkSync(src, dst);
      }
    }
  }
}

/** The .bin links whose package was mirrored (relative links, so they point into the mirror); without them
 * npm takes the packages for incomplete and fetches them again. */
function mirrorBinLinks(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    const target = readlinkSync(join(from, name));
    if (existsSync(join(to, target))) symlinkSync(target, join(to, name));
  }
}

/** The top-level packages of the lockfile that a production install holds. */
function productionPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean; link?: boolean }> };
  return Object.entries(lock.packages)
    .filter(([path, meta]) => /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) && !meta.dev)
    .map(([path]) => path.slice('node_modules/'.length));
}

function npm(args: string[], cwd: string): string {
  return execFileSync(NPM, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
}

test('the packed package installs offline and every export imports', { timeout: 180_000 }, () => {
  const scratch = mkdtempSync(join(tmpdir(), 'nereid-pack-'));
  try {
    const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], ROOT)) as [{ filename: string; files: { path: string }[] }];
    const paths = packed[0].files.map((f) => f.path);
    assert.ok(paths.includes('dist/src/index.js'), 'the tarball holds the compiled code');
    assert.ok(paths.includes('dist/src/experimental.d.ts'), 'the tarball holds the type declarations');
    assert.deepEqual(paths.filter((p) => p.startsWith('dist/test/') || p.startsWith('test/')), [], 'no tests in the tarball');
    for (const file of ['console/index.html', 'console/app.js']) assert.ok(paths.includes(file), `the tarball holds the web console's ${file}`);
    // The install script builds the native addons from binding.gyp's sources (it is skipped below).
    const gyp = JSON.parse(readFileSync(join(ROOT, 'binding.gyp'), 'utf8')) as { targets: { sources: string[] }[] };
    for (const file of ['scripts/build-native.mjs', 'binding.gyp', ...gyp.targets.flatMap((t) => t.sources)]) {
      assert.ok(paths.includes(file), `the tarball holds ${file}`);
    }

    const app = join(scratch, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
    for (const name of productionPackages()) {
      // Optional packages of other platforms are in the lockfile but not installed.
      if (existsSync(join(ROOT, 'node_modules', name))) mirror(join(ROOT, 'node_modules', name), join(app, 'node_modules', name));
    }
    mirrorBinLinks(join(ROOT, 'node_modules', '.bin'), join(app, 'node_modules', '.bin'));
    npm(['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', '--cache', join(scratch, 'npm-cache'), join(scratch, packed[0].filename)], app);

    const pkg = JSON.parse(readFileSync(join(app, 'node_modules', 'nereid', 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    const specifiers = Object.keys(pkg.exports).map((k) => `nereid${k.slice(1)}`);
    assert.deepEqual(specifiers, ['nereid', 'nereid/backend-utils', 'nereid/experimental']);
    const script = `for (const s of ${JSON.stringify(specifiers)}) console.log(s, Object.keys(await import(s)).length);`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: app, encoding: 'utf8' });
    for (const line of out.trim().split('\n')) assert.match(line, /^\S+ [1-9]\d*$/, `an export with no names: ${line}`);
    // The command npm linked: each subcommand starts from the installed files.
    const bin = join(app, 'node_modules', '.bin', 'nereid');
    for (const command of ['serve', 'perf', 'analyze']) {
      assert.match(execFileSync(process.execPath, [bin, command, '--help'], { cwd: app, encoding: 'utf8' }), /^Usage: nereid /, command);
    }
    // The installed package serves a model in process, with the backends an application passes it.
    const serve = `
      import { InferenceServer } from 'nereid';
      import { defaultBackends } from 'nereid/experimental';
      const server = await InferenceServer.create({ modelRepositories: [${JSON.stringify(EXAMPLES)}], modelControlMode: 'explicit', loadModels: ['simple'], backends: defaultBackends() });
      const ints = (f) => new Uint8Array(Int32Array.from({ length: 16 }, f).buffer);
      const res = await server.infer({ model: 'simple', inputs: [
        { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], data: ints((_, i) => i) },
        { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], data: ints(() => 1) },
      ] });
      const out = res.outputs.find((o) => o.name === 'OUTPUT0');
      console.log(Array.from(new Int32Array(out.data.buffer, out.data.byteOffset, 16)).join(','));
      await server.close();`;
    const sums = execFileSync(process.execPath, ['--input-type=module', '-e', serve], { cwd: app, encoding: 'utf8' });
    assert.equal(sums.trim(), Array.from({ length: 16 }, (_, i) => i + 1).join(','));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
});
