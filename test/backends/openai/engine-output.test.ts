import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EngineOutput } from '../../../src/backends/openai/engine-output.js';
import type { Logger } from '../../../src/observability/logger.js';

// An engine's output into the log is bounded: line length, lines per window, and a partial line held.

function capture(): { logger: Logger; info: string[]; warn: string[] } {
  const info: string[] = [];
  const warn: string[] = [];
  const logger = { info: (m: string) => info.push(m), warn: (m: string) => warn.push(m) } as unknown as Logger;
  return { logger, info, warn };
}

test('lines split at \\n and \\r, across chunks, each under the tag; long lines are cut', () => {
  const c = capture();
  const out = new EngineOutput(c.logger, "model 'm' engine");
  out.push(Buffer.from('first\r\nsec'));
  out.push(Buffer.from('ond\nprogress 10%\rprogress 20%\n'));
  out.push(Buffer.from(`${'x'.repeat(5000)}\n`));
  assert.deepEqual(c.info.slice(0, 4), ["model 'm' engine: first", "model 'm' engine: second", "model 'm' engine: progress 10%", "model 'm' engine: progress 20%"]);
  assert.equal(c.info[4], `model 'm' engine: ${'x'.repeat(1000)}…`);
});

test('past 200 lines in a window the rest are counted, not logged; a line without its end is bounded', () => {
  const c = capture();
  const out = new EngineOutput(c.logger, 'e');
  out.push(Buffer.from(Array.from({ length: 1000 }, (_, i) => `line ${i}`).join('\n') + '\n'));
  assert.equal(c.info.length, 200);
  out.flush();
  assert.deepEqual(c.warn, ['e: 800 lines of its output were not logged (more than 200 in 10 s)']);
  // 1 MB without a newline: logged (cut) once it passes the bound, not held.
  const d = capture();
  const big = new EngineOutput(d.logger, 'e');
  for (let i = 0; i < 16; i++) big.push(Buffer.alloc(65536, 0x61));
  assert.ok(d.info.length >= 1 && d.info.every((l) => l.length <= 1004), `${d.info.length} lines`);
  assert.match(big.tail(), /^; its last output: a{300}…/);
});
