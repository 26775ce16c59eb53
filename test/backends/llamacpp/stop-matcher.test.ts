import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopMatcher } from '../../../src/backends/llamacpp/stop-matcher.js';

// Stop strings over text that arrives in pieces: what goes out at once, what waits, where it stops.

function run(stops: string[], pieces: string[]): { out: string[]; stopped: boolean; rest: string } {
  const m = new StopMatcher(stops);
  const out = pieces.map((p) => m.push(p));
  return { out, stopped: m.stopped, rest: m.flush() };
}

test('without stop strings every piece goes out as it comes', () => {
  assert.deepEqual(run([], ['a', 'b']), { out: ['a', 'b'], stopped: false, rest: '' });
});

test('a stop string split over pieces: its start waits, then nothing of it goes out', () => {
  assert.deepEqual(run(['END'], ['abcE', 'N', 'Dxyz', 'more']), { out: ['abc', '', '', ''], stopped: true, rest: '' });
});

test('a tail that turns out not to be a stop string goes out with the next piece, or at the end', () => {
  assert.deepEqual(run(['END'], ['abE', 'Nx']), { out: ['ab', 'ENx'], stopped: false, rest: '' });
  assert.deepEqual(run(['END'], ['abEN']), { out: ['ab'], stopped: false, rest: 'EN' });
});

test('the earliest of several stop strings wins, inside one piece too', () => {
  assert.deepEqual(run(['zz', 'b'], ['a b zz']), { out: ['a '], stopped: true, rest: '' });
});

test('matched names the stop string that ended the text: the earliest, not the first listed', () => {
  const m = new StopMatcher(['zz', 'b']);
  assert.equal(m.matched, undefined);
  m.push('a b zz');
  assert.equal(m.matched, 'b');
  const none = new StopMatcher(['END']);
  none.push('abc');
  assert.equal(none.matched, undefined);
});
