import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isNereidError } from '../../src/errors.js';
import { parseMessage, parseModelConfig, printModelConfig } from '../../src/config/index.js';

const parse = (text: string) => parseModelConfig(text, 'config.pbtxt');

/** Asserts an INVALID_ARG error at exactly `line:col` of config.pbtxt whose text matches `what`. */
function throwsAt(text: string, line: number, col: number, what: RegExp): void {
  assert.throws(() => parse(text), (e: unknown) => {
    assert.ok(isNereidError(e), `not a NereidError: ${String(e)}`);
    assert.equal(e.code, 'INVALID_ARG');
    const prefix = `failed to read text proto from config.pbtxt: Error parsing text-format inference.ModelConfig: ${line}:${col}: `;
    assert.ok(e.message.startsWith(prefix), `expected "${prefix}…", got "${e.message}"`);
    assert.match(e.message.slice(prefix.length), what);
    return true;
  });
}

test('empty text is an all-default config with every field filled', () => {
  const c = parse('');
  assert.equal(c.name, '');
  assert.equal(c.max_batch_size, 0);
  assert.deepEqual(c.input, []);
  assert.deepEqual(c.parameters, {});
  assert.equal(c.version_policy, undefined);
  assert.equal(c.dynamic_batching, undefined);
  assert.equal(printModelConfig(c), '');
});

test('message fields: colon optional, {} and <> delimiters', () => {
  const c = parse('version_policy: { all { } }\ndynamic_batching < max_queue_delay_microseconds: 5 >\noptimization: < graph { level: 1 } >');
  assert.deepEqual(c.version_policy, { all: {} });
  assert.equal(c.dynamic_batching?.max_queue_delay_microseconds, 5);
  assert.equal(c.optimization?.graph?.level, 1);
  assert.equal(c.optimization?.priority, 'PRIORITY_DEFAULT');
});

test('a present sub-message has all its defaults filled', () => {
  const c = parse('input { name: "x" }');
  assert.deepEqual(c.input[0], {
    name: 'x', data_type: 'TYPE_INVALID', format: 'FORMAT_NONE', dims: [], is_shape_tensor: false,
    allow_ragged_batch: false, optional: false, is_non_linear_format_io: false,
  });
});

test('repeated scalars: repeated, as lists, mixed, and empty lists', () => {
  const c = parse('input { dims: 1 dims: [2, 3] dims: 4 dims: [] }\noutput { dims: [ ] }');
  assert.deepEqual(c.input[0]!.dims, [1, 2, 3, 4]);
  assert.deepEqual(c.output[0]!.dims, []);
});

test('repeated messages: blocks, lists with and without colon, empty list', () => {
  const c = parse('input { name: "a" }\ninput [ { name: "b" }, < name: "c" > ]\ninput: [ { name: "d" } ]\noutput []');
  assert.deepEqual(c.input.map((i) => i.name), ['a', 'b', 'c', 'd']);
  assert.deepEqual(c.output, []);
});

test('separators: commas and semicolons after fields', () => {
  const c = parse('name: "m", max_batch_size: 4; input { name: "a", dims: 1; };');
  assert.equal(c.name, 'm');
  assert.equal(c.max_batch_size, 4);
  assert.deepEqual(c.input[0]!.dims, [1]);
});

test('maps: entries, list form, comma between key and value, later duplicate wins, uint64 keys', () => {
  const c = parse([
    'parameters { key: "a" value { string_value: "1" } }',
    'parameters: { key: "b", value: {string_value: "2"} }',
    'parameters [ { key: "c" value { string_value: "3" } }, { key: "a" value { string_value: "4" } } ]',
    'parameters { key: "empty" }',
    'metric_tags { key: "t" value: "v" }',
    'dynamic_batching { priority_queue_policy { key: 2 value { max_queue_size: 7 } } priority_queue_policy { key: 0x3 value { } } }',
  ].join('\n'));
  assert.deepEqual(Object.keys(c.parameters).sort(), ['a', 'b', 'c', 'empty']);
  assert.equal(c.parameters['a']?.string_value, '4');
  assert.equal(c.parameters['empty']?.string_value, '');
  assert.deepEqual(c.metric_tags, { t: 'v' });
  assert.equal(c.dynamic_batching?.priority_queue_policy['2']?.max_queue_size, 7);
  assert.equal(c.dynamic_batching?.priority_queue_policy['3']?.timeout_action, 'REJECT');
});

test('enums by name or by number', () => {
  const c = parse('input { data_type: TYPE_FP32 format: 2 }\ninstance_group { kind: 2 }');
  assert.equal(c.input[0]!.data_type, 'TYPE_FP32');
  assert.equal(c.input[0]!.format, 'FORMAT_NCHW');
  assert.equal(c.instance_group[0]!.kind, 'KIND_CPU');
});

test('strings: both quotes, C escapes, unicode, adjacent concatenation', () => {
  const c = parse([
    String.raw`name: 'it\'s' " \"x\"" # comment "not a string"`,
    String.raw`platform: "a\nb\tc\\d\x41\101\u00e9\?\a"`,
    'backend: "héllo ✓"',
    String.raw`runtime: "\U0001F600"`,
  ].join('\n'));
  assert.equal(c.name, `it's "x"`);
  assert.equal(c.platform, 'a\nb\tc\\dAAé?\x07');
  assert.equal(c.backend, 'héllo ✓');
  assert.equal(c.runtime, '😀');
});

test('strings: a \\u surrogate pair is one character; \\X is no escape in protobuf', () => {
  assert.equal(parse(String.raw`name: "a\uD83D\uDE00b"`).name, 'a😀b');
  assert.equal(parse(String.raw`name: "\ud83d\ude00"`).name, '😀');
  throwsAt(String.raw`name: "\X41"`, 1, 8, /^Invalid escape sequence in string literal.$/);
});

test('integers: decimal, hex, octal, negative, 64-bit extremes', () => {
  const c = parse([
    'max_batch_size: 0x10',
    'input { dims: [010, -1, 0] }',
    'dynamic_batching { max_queue_delay_microseconds: 18446744073709551615 }',
    'model_warmup { count: 4294967295 }',
    'instance_group { count: -2147483648 secondary_devices { device_id: -9007199254740991 } }',
  ].join('\n'));
  assert.equal(c.max_batch_size, 16);
  assert.deepEqual(c.input[0]!.dims, [8, -1, 0]);
  assert.equal(c.dynamic_batching?.max_queue_delay_microseconds, 2 ** 64);
  assert.equal(c.model_warmup[0]!.count, 4294967295);
  assert.equal(c.instance_group[0]!.count, -2147483648);
  assert.equal(c.instance_group[0]!.secondary_devices[0]!.device_id, -9007199254740991);
  // The rounded 64-bit maximum prints back as the exact maximum.
  assert.match(printModelConfig(c), /max_queue_delay_microseconds: 18446744073709551615\n/);
});

test('integer range checks per type', () => {
  throwsAt('max_batch_size: 2147483648', 1, 17, /^Integer out of range \(2147483648\)$/);
  throwsAt('max_batch_size: -2147483649', 1, 18, /^Integer out of range \(-2147483649\)$/);
  throwsAt('model_warmup { count: 4294967296 }', 1, 23, /^Integer out of range/);
  throwsAt('model_warmup {\n  count: -1 }', 2, 10, /^Expected integer, got: -$/);
  throwsAt('dynamic_batching { priority_levels: 18446744073709551616 }', 1, 37, /^Integer out of range/);
  throwsAt('max_batch_size: 1.5', 1, 17, /^Expected integer, got: 1.5$/);
  throwsAt('max_batch_size: "4"', 1, 17, /^Expected integer, got: "4"$/);
});

test('floats: exponents, f suffix, leading dot, integers, inf/infinity/nan in any case', () => {
  const c = parse([
    'model_metrics { metric_control { histogram_options {',
    '  buckets: [1e-3, 2.5f, .5, 3, -Infinity, INF, 16, 1E2F, 0]',
    '  buckets: nan',
    '} } }',
    'sequence_batching { direct { minimum_slot_utilization: -inf } }',
  ].join('\n'));
  const b = c.model_metrics!.metric_control[0]!.histogram_options!.buckets;
  assert.deepEqual(b.slice(0, 9), [0.001, 2.5, 0.5, 3, -Infinity, Infinity, 16, 100, 0]);
  assert.ok(Number.isNaN(b[9]));
  assert.equal(c.sequence_batching?.direct?.minimum_slot_utilization, -Infinity);
  throwsAt('sequence_batching { direct { minimum_slot_utilization: x } }', 1, 56, /^Expected double, got: x$/);
});

test('floats: an integer written in hex or octal is refused, as protobuf takes only decimal ones', () => {
  const hist = (v: string): string => `model_metrics { metric_control { histogram_options { buckets: ${v} } } }`;
  throwsAt(hist('0x10'), 1, 63, /^Expect a decimal number, got: 0x10$/);
  throwsAt(hist('-017'), 1, 64, /^Expect a decimal number, got: 017$/);
  throwsAt(hist('0X1'), 1, 63, /^Expect a decimal number, got: 0X1$/);
});

test('bools: true/false/True/False/t/f/1/0', () => {
  const c = parse('input { optional: True is_shape_tensor: t allow_ragged_batch: 1 }\ninput { optional: false is_shape_tensor: f allow_ragged_batch: 0 }\noutput { is_shape_tensor: true is_non_linear_format_io: False }');
  assert.deepEqual([c.input[0]!.optional, c.input[0]!.is_shape_tensor, c.input[0]!.allow_ragged_batch], [true, true, true]);
  assert.deepEqual([c.input[1]!.optional, c.input[1]!.is_shape_tensor, c.input[1]!.allow_ragged_batch], [false, false, false]);
  assert.deepEqual([c.output[0]!.is_shape_tensor, c.output[0]!.is_non_linear_format_io], [true, false]);
  throwsAt('input {\n optional: 2 }', 2, 12, /^Integer out of range \(2\)$/);
  throwsAt('input { optional: yes }', 1, 23, /^Invalid value for boolean field "optional"/);
});

test('comments anywhere', () => {
  const c = parse('# header\nname: "m" # trailing\n# between\ninput { # inside\n dims: [1, # in a list\n 2] }\n#end');
  assert.equal(c.name, 'm');
  assert.deepEqual(c.input[0]!.dims, [1, 2]);
});

test('unknown field: error names it and its message type', () => {
  throwsAt('name: "m"\n  bogus: 1', 2, 8, /^Message type "inference.ModelConfig" has no field named "bogus".$/);
  throwsAt('input {\n  name: "a"\n  dimz: [1]\n}', 3, 7, /^Message type "inference.ModelInput" has no field named "dimz".$/);
  throwsAt('parameters { key: "a" val { } }', 1, 27, /has no field named "val"/);
});

test('duplicate non-repeated field is an error once the field is present', () => {
  throwsAt('name: "a"\nname: "b"', 2, 5, /^Non-repeated field "name" is specified multiple times.$/);
  throwsAt('dynamic_batching { }\n  dynamic_batching { }', 2, 20, /^Non-repeated field "dynamic_batching" is specified multiple times.$/);
  throwsAt('input { reshape { } reshape { } }', 1, 29, /^Non-repeated field "reshape"/);
  // Protobuf's rule: a proto3 scalar at its default is not "present", so Triton accepts this; so do we.
  assert.equal(parse('max_batch_size: 0\nmax_batch_size: 8').max_batch_size, 8);
});

test('two members of one oneof is an error', () => {
  throwsAt('dynamic_batching { }\nsequence_batching { }', 2, 19,
    /^Field "sequence_batching" is specified along with field "dynamic_batching", another member of oneof "scheduling_choice".$/);
  throwsAt('version_policy { latest { } all { } }', 1, 33, /another member of oneof "policy_choice"/);
  throwsAt('model_warmup { inputs { key: "a" value { zero_data: false random_data: true } } }', 1, 70, /oneof "input_data_type"/);
});

test('syntax errors with positions', () => {
  throwsAt('name "m"', 1, 6, /^Expected ":", found ""m"".$/);
  throwsAt('max_batch_size 4', 1, 16, /^Expected ":", found "4".$/);
  throwsAt('input {\n  name: "a"\n', 3, 1, /^Expected "}", found "".$/);
  throwsAt('input { name: "a" >', 1, 19, /^Message type "inference.ModelInput" has no field|Expected identifier/);
  throwsAt('input: "x"', 1, 8, /^Expected "{", found ""x"".$/);
  throwsAt('input { dims: [1, 2,] }', 1, 21, /^Expected integer, got: ]$/);
  throwsAt('input { dims: [1 2] }', 1, 18, /^Expected ",", found "2".$/);
  throwsAt('name: [ "a" ]', 1, 7, /^Expected string, got: \[$/);
  throwsAt('version_policy [ { } ]', 1, 16, /^Expected "{", found "\[".$/);
  throwsAt('name: "abc', 1, 7, /^Unexpected end of string.$/);
  throwsAt('name: "ab\nc"', 1, 7, /^String literals cannot cross line boundaries.$/);
  throwsAt(String.raw`name: "a\qb"`, 1, 9, /^Invalid escape sequence in string literal.$/);
  throwsAt('max_batch_size: 12abc', 1, 19, /^Need space between number and identifier.$/);
  throwsAt('max_batch_size: 08', 1, 17, /^Numbers starting with leading zero must be in octal.$/);
  throwsAt('max_batch_size: 0x', 1, 17, /^"0x" must be followed by hex digits.$/);
  throwsAt('input { data_type: TYPE_FLOAT }', 1, 31, /^Unknown enumeration value of "TYPE_FLOAT" for field "data_type".$/);
  throwsAt('input { data_type: 99 }', 1, 23, /^Unknown enumeration value of "99" for field "data_type".$/);
  throwsAt('input { data_type: "TYPE_FP32" }', 1, 20, /^Expected integer or identifier/);
  throwsAt('name: 5', 1, 7, /^Expected string, got: 5$/);
  throwsAt('} name: "x"', 1, 1, /^Expected identifier, got: }$/);
  throwsAt('name: \x01', 1, 7, /^Invalid control characters encountered in text.$/);
});

test('max_inflight_responses is an unknown field, as no released proto had it; max_inflight_requests reads', () => {
  const c = parse('ensemble_scheduling { max_inflight_requests: 4 }');
  assert.equal(c.ensemble_scheduling?.max_inflight_requests, 4);
  assert.match(printModelConfig(c), /max_inflight_requests: 4/);
  throwsAt('ensemble_scheduling { max_inflight_responses: 4 }', 1, 45,
    /^Message type "inference.ModelEnsembling" has no field named "max_inflight_responses".$/);
});

test('parseMessage parses any message type by schema name', () => {
  const g = parseMessage('name: "g" kind: KIND_CPU count: 2', 'g.pbtxt', 'ModelInstanceGroup');
  assert.equal(g['kind'], 'KIND_CPU');
  assert.deepEqual(g['gpus'], []);
});

test('printer: number order, defaults left out, repeated one per line, sorted map keys, escapes', () => {
  const c = parse([
    'input { dims: [1, 2] name: "in" }',
    'max_batch_size: 0',
    'name: "m\\"q\\n"',
    'parameters { key: "z" value { string_value: "1" } }',
    'parameters { key: "a" value { } }',
    'version_policy { all { } }',
  ].join('\n'));
  assert.equal(printModelConfig(c), [
    'name: "m\\"q\\n"',
    'version_policy {',
    '  all {',
    '  }',
    '}',
    'input {',
    '  name: "in"',
    '  dims: 1',
    '  dims: 2',
    '}',
    'parameters {',
    '  key: "a"',
    '  value {',
    '  }',
    '}',
    'parameters {',
    '  key: "z"',
    '  value {',
    '    string_value: "1"',
    '  }',
    '}',
    '',
  ].join('\n'));
});
