import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * An --api-keys-file in `dir` (owner-only, as the server requires) holding one line per key: its id, its scopes
 * and the SHA-256 of the key itself. Returns the file's path.
 */
export async function writeKeysFile(dir: string, keys: ReadonlyArray<readonly [id: string, scopes: string, key: string]>): Promise<string> {
  const file = join(dir, 'keys');
  const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
  await writeFile(file, keys.map(([id, scopes, key]) => `${id} ${scopes} ${sha256(key)}\n`).join(''), { mode: 0o600 });
  return file;
}
