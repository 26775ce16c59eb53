import { createRequire } from 'node:module';

/** Where node-gyp puts the addon, from dist/src/models/ (the compiled location of this file). */
const ADDON = '../../../build/Release/nereid_malloc.node';

/**
 * Gives the memory the C heap holds free back to the system (native/malloc.c), after a model was unloaded to
 * keep within the memory budget: without it the weights of the models unloaded stay resident in glibc's heap,
 * and the process's RSS passes the budget while the models loaded are within it. False where there is nothing
 * to trim, no glibc, or no addon (the install could not build it).
 */
export function trimHeap(): boolean {
  try {
    return (createRequire(import.meta.url)(ADDON) as { trim(): boolean }).trim();
  } catch {
    return false;
  }
}
