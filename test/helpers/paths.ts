import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, found from this compiled file's location (dist/test/helpers → root). */
function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above the test files');
    dir = up;
  }
  return dir;
}

export const ROOT = findRoot();
export const EXAMPLES = join(ROOT, 'examples', 'model_repository');
export const FIXTURES = join(ROOT, 'test', 'fixtures');
