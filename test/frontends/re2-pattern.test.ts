import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PatternError, re2Pattern } from '../../src/frontends/re2-pattern.js';

// RE2 patterns as tritonserver reads them for header forwarding: `(?i)` first, partial matches.

const matches = (pattern: string, names: string[]): string[] => names.filter((n) => re2Pattern(pattern).test(n));
const NAMES = ['my_header_1', 'MY_HEADER_2', 'x-team', 'X-Team', 'sequence_id', 'a\nb'];

test('case-insensitive unless an inline flag turns it off, for the whole pattern or a group', () => {
  assert.deepEqual(matches('MY_HEADER.*', NAMES), ['my_header_1', 'MY_HEADER_2']);
  assert.deepEqual(matches('(?-i)MY_HEADER.*', NAMES), ['MY_HEADER_2']);
  assert.deepEqual(matches('^(?-i:x)-team$', NAMES), ['x-team']);
  assert.deepEqual(matches('(?-i)^X-(?i)TEAM$', NAMES), ['X-Team']);
  assert.deepEqual(matches('(?-i)^[A-Z]', NAMES), ['MY_HEADER_2', 'X-Team']);
  assert.deepEqual(matches('^[x-y]-', NAMES), ['x-team', 'X-Team']);
  assert.deepEqual(matches('^[[:upper:]]+_', NAMES), ['my_header_1', 'MY_HEADER_2', 'sequence_id']);
  assert.deepEqual(matches('(?-i)^[[:upper:]]+_', NAMES), ['MY_HEADER_2']);
});

test('RE2 spellings: named groups, \\Q…\\E, \\A and \\z, POSIX classes, alternation, dot-all and ungreedy flags', () => {
  assert.deepEqual(matches('\\A(?P<name>x)-team\\z', NAMES), ['x-team', 'X-Team']);
  assert.deepEqual(matches('\\Qsequence_\\Eid', NAMES), ['sequence_id']);
  assert.deepEqual(matches('^[[:alpha:]_]+_id$|^x-', NAMES), ['x-team', 'X-Team', 'sequence_id']);
  assert.deepEqual(matches('a.b', NAMES), []);
  assert.deepEqual(matches('(?s)a.b', NAMES), ['a\nb']);
  assert.equal(re2Pattern('(?U)a.*b').exec('aXbYb')![0], 'aXb');
  assert.equal(re2Pattern('(?U)a.*?b').exec('aXbYb')![0], 'aXbYb');
});

test('text RE2 refuses is refused: lookaround, unbalanced groups and classes', () => {
  for (const bad of ['(?=x)', '(?<!x)y', '(unclosed', 'a)', '[abc', '\\']) assert.throws(() => re2Pattern(bad), PatternError, bad);
});
