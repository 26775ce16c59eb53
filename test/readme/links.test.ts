import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ROOT } from '../helpers/paths.js';

// The READMEs and the pages in docs/ link to each other by relative path and heading; a page moved or a heading
// renamed must not leave a reader at a dead link.

const pages = ['README.md', 'bench/README.md', 'bench/HISTORY.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (heading: string): string => heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), 'utf8').replace(/^\s*```[\s\S]*?^\s*```/gm, '');
  return new Set([...text.matchAll(/^#+ (.*)$/gm)].map((m) => anchor(m[1]!)));
}

for (const page of pages) {
  test(`every relative link of ${page} reaches a file and heading that exist`, () => {
    const text = readFileSync(join(ROOT, page), 'utf8').replace(/^\s*```[\s\S]*?^\s*```/gm, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, hash] = target!.split('#') as [string, string | undefined];
      const file = path ? join(dirname(page), path) : page;
      assert.ok(existsSync(join(ROOT, file)), `${page} links to ${target}, which does not exist`);
      if (hash) assert.ok(anchors(file).has(hash), `${page} links to ${target}: ${file} has no heading '#${hash}'`);
    }
  });
}
