import { createRequire } from 'node:module';

/** Where node-gyp puts the addon, from dist/src/cli/ (the compiled location of this file). */
const ADDON = '../../../build/Release/nereid_exit.node';

/**
 * Ends the process with `code` at once (native/exit.c), without stopping worker threads first: after the exit
 * timeout a worker may be inside a native run, and Node's ordinary exit can then abort the process. Falls back
 * to process.exit when the addon was not built.
 */
export function exitNow(code: number): never {
  try {
    const addon = createRequire(import.meta.url)(ADDON) as { exitNow(code: number): never };
    addon.exitNow(code);
  } catch {
    // No addon: the ordinary exit.
  }
  process.exit(code);
}
