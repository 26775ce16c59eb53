// Builds the native addons (binding.gyp → build/Release/nereid_shm.node, the shared-memory mmap addon, and
// nereid_exit.node, an immediate exit after the exit timeout) during `npm install` /
// `npm ci`. It never fails the install: without the addon the server maps nothing and reaches shared memory
// through positional file reads and writes instead (src/sharedmemory/file-memory.ts), which is slower for large
// tensors but correct. Node's headers are taken from the local installation when npm was not told where they
// are, so the build needs no network.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function nodeGyp() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp)) return process.env.npm_config_node_gyp;
  const bundled = join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  return existsSync(bundled) ? bundled : undefined;
}

/** The prefix whose include/node holds this Node's headers (a distribution's /usr, or Node's own install). */
function localNodeDir() {
  const prefix = join(dirname(process.execPath), '..');
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

function skip(why) {
  process.stderr.write(`nereid: shared-memory addon not built (${why}); system shared memory will use file reads and writes\n`);
  process.exit(0);
}

if (process.env.NEREID_SKIP_NATIVE === '1') skip('NEREID_SKIP_NATIVE=1');
if (process.platform !== 'linux' && process.platform !== 'darwin') skip(`no POSIX shared memory on ${process.platform}`);
const gyp = nodeGyp();
if (!gyp) skip('node-gyp not found');
const env = { ...process.env };
// node-gyp reads npm_config_nodedir over its own flag, so an empty one must go, not merely be outvoted.
const nodedir = env.npm_config_nodedir || localNodeDir();
if (nodedir) env.npm_config_nodedir = nodedir;
else delete env.npm_config_nodedir;
const r = spawnSync(process.execPath, [gyp, 'rebuild'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
if (r.status !== 0) {
  process.stderr.write(r.stdout + r.stderr);
  skip(`node-gyp exited with ${r.status ?? r.signal}`);
}
