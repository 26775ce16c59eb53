#!/usr/bin/env node
// Builds llama.cpp's own OpenAI-compatible server, llama-server, from the llama.cpp source that node-llama-cpp
// ships as a git bundle, and prints the binary's path. The gateway backend's tests run against it: a real
// engine that speaks the same /v1 API as vLLM, SGLang and TGI. Nothing is downloaded: the web UI and HTTPS
// support are left out.
//
// The binary is cached outside the checkout, under $NEREID_CACHE_DIR (default ~/.cache/nereid), keyed by the
// bundle's commit, so it is built once per machine (about five minutes on two cores; CMake and g++ needed).
// The compiler's output goes to a log file beside the binary, never to the terminal.
// Usage: node scripts/build-llama-server.mjs [--check]   (--check: print the path if built, exit 1 if not)
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { homedir, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The llama.cpp source bundle inside the installed node-llama-cpp. */
function bundlePath() {
  const bundle = join(ROOT, 'node_modules', 'node-llama-cpp', 'llama', 'gitRelease.bundle');
  if (!existsSync(bundle)) throw new Error(`llama.cpp source bundle not found at ${bundle} (is node-llama-cpp installed?)`);
  return bundle;
}

export function llamaServerPath() {
  const bundle = bundlePath();
  const head = execFileSync('git', ['bundle', 'list-heads', bundle], { encoding: 'utf8' }).trim().split(/\s+/)[0];
  const cache = process.env.NEREID_CACHE_DIR ?? join(homedir(), '.cache', 'nereid');
  return { bundle, dir: join(cache, 'llama-server', head.slice(0, 12)), bin: join(cache, 'llama-server', head.slice(0, 12), 'llama-server') };
}

/** The build log: beside the cached binary, kept after the build (the compiler's warnings are thousands of lines). */
export function buildLogPath() {
  return `${llamaServerPath().dir}.build.log`;
}

/** The last lines of the build log, for a failure message. */
export function buildLogTail(lines = 30) {
  try {
    return readFileSync(buildLogPath(), 'utf8').split('\n').slice(-lines - 1).join('\n');
  } catch {
    return '';
  }
}

export function buildLlamaServer(log = (s) => process.stderr.write(`${s}\n`)) {
  const { bundle, dir, bin } = llamaServerPath();
  if (existsSync(bin)) return bin;
  const work = `${dir}.build-${process.pid}`;
  const logFile = buildLogPath();
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const out = openSync(logFile, 'w');
  log(`building llama-server from ${bundle} (a few minutes, once); log: ${logFile}`);
  const run = (cmd, args, cwd) => {
    writeSync(out, `$ ${cmd} ${args.join(' ')}\n`);
    execFileSync(cmd, args, { cwd, stdio: ['ignore', out, out] });
  };
  try {
    run('git', ['-c', 'advice.detachedHead=false', 'clone', '--quiet', bundle, 'src'], work);
    const src = join(work, 'src');
    run('cmake', ['-B', 'build', '-DCMAKE_BUILD_TYPE=Release', '-DBUILD_SHARED_LIBS=OFF',
      '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF', '-DLLAMA_BUILD_APP=OFF',
      // No downloads and no TLS: the prebuilt web UI would be fetched, and tests speak plain HTTP on loopback.
      '-DLLAMA_USE_PREBUILT_UI=OFF', '-DLLAMA_BUILD_UI=OFF', '-DLLAMA_OPENSSL=OFF'], src);
    run('nice', ['-n', '10', 'cmake', '--build', 'build', '--target', 'llama-server', '-j', String(Math.max(1, cpus().length))], src);
    mkdirSync(dir, { recursive: true });
    renameSync(join(src, 'build', 'bin', 'llama-server'), bin);
  } catch (e) {
    throw new Error(`llama-server build failed (${e.message.split('\n')[0]}); the end of ${logFile}:\n${buildLogTail()}`);
  } finally {
    closeSync(out);
    rmSync(work, { recursive: true, force: true });
  }
  log(`llama-server built: ${bin}`);
  return bin;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--check')) {
    const { bin } = llamaServerPath();
    if (!existsSync(bin)) process.exit(1);
    console.log(bin);
  } else {
    try {
      console.log(buildLlamaServer());
    } catch (e) {
      console.error(e.message);
      process.exit(1);
    }
  }
}
