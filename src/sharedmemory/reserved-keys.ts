import { invalidArg } from '../errors.js';

/** Keys Triton keeps for its Python backend's own regions. */
const TRITON_PREFIX = 'triton_python_backend_shm_region_';
/** Keys Nereid keeps for its Python backend's own regions, under the default shm-region-prefix-name. */
export const NEREID_PYTHON_PREFIX = 'nereid_python_';

/**
 * The shared-memory objects that are the server's own (its Python stubs' input and output regions, which hold
 * other clients' tensors), which no client may register. A backend that creates such objects reserves the prefix
 * of their names (a random part in it, so that they cannot be guessed either); besides, keys under Triton's and
 * Nereid's default prefixes are always refused. shm_open ignores every leading '/', so the comparison does too:
 * '///nereid_python_…' names the same object as 'nereid_python_…'.
 */
export class ReservedKeys {
  private readonly prefixes = new Set<string>();

  /** Keys that start with `prefix` (once leading slashes are stripped) are the server's own from now on. */
  reserve(prefix: string): void {
    this.prefixes.add(prefix.replace(/^\/+/, ''));
  }

  /**
   * Throws when a client may not register `key` for region `name`: a key that names no object ('', '/', '///', or
   * one with a NUL byte, which shm_open would cut short), a reserved prefix, or an object of the server's.
   */
  check(name: string, key: string): void {
    const bare = key.replace(/^\/+/, '');
    // shm_open fails on a name with nothing after its slashes, in Triton's words; the client's mistake, so 400.
    if (bare === '') throw invalidArg(`Unable to open shared memory region: '${key}'`);
    if (key.includes('\0')) throw invalidArg(`failed to register shared memory region '${name}': invalid args`);
    for (const prefix of [TRITON_PREFIX, NEREID_PYTHON_PREFIX]) {
      if (bare.startsWith(prefix)) {
        throw invalidArg(`cannot register shared memory region '${name}' with key '${key}' as the key contains the reserved prefix '${prefix}'`);
      }
    }
    for (const prefix of this.prefixes) {
      if (bare.startsWith(prefix)) throw invalidArg(`cannot register shared memory region '${name}' with key '${key}' as the key names a shared memory object of the server's own`);
    }
  }
}
