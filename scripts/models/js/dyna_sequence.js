// Triton's dyna_sequence backend (server src/test/dyna_sequence, the backend Triton's QA gives
// simple_string_dyna_sequence), as a JavaScript model: an INT32 accumulator per sequence, kept in this
// instance between executions and keyed by the sequence's CORRID control value.
//
// For each request, with READY = 1:
//   START = 1: the accumulator becomes the sum of the INPUT elements; START = 0: they are added to it.
//   END = 1: CORRID (truncated to 32 bits) is added too, and the sequence's accumulator is then forgotten.
//   OUTPUT has INPUT's shape, every element the accumulator's value.
// With READY = 0 the accumulator is left alone and the response has no outputs.
//
// CORRID is TYPE_UINT64 or TYPE_STRING; a string id must read as a decimal integer (as C's stoi reads it:
// leading blanks, a sign, digits, anything after them ignored), else that request gets an error. Sums wrap
// around as 32-bit integers. The `execute_delay_ms` parameter makes every execution wait that long first.
//
// The sequence batcher keeps each sequence on one instance, so the per-instance accumulators of an
// instance_group with several instances never disagree.
import { setTimeout as sleep } from 'node:timers/promises';
import { InferenceResponse, Tensor, TritonError, TritonModelException, getInputTensorByName } from 'nereid/backend-utils';

const CONTROLS_MESSAGE = "'START', 'END, 'READY' and 'CORRID' must be configured as the control inputs";

/** The config's checks, with the messages of Triton's backend; returns the CORRID data type. */
function validate(config) {
  const controls = config.sequence_batching?.control_input ?? [];
  const names = controls.map((c) => c.name);
  if (controls.length !== 4 || !['START', 'END', 'READY', 'CORRID'].every((n) => names.includes(n))) {
    throw new TritonModelException(CONTROLS_MESSAGE);
  }
  const corridType = controls.find((c) => c.name === 'CORRID').control?.[0]?.data_type;
  if (corridType !== 'TYPE_UINT64' && corridType !== 'TYPE_STRING') {
    throw new TritonModelException('model CORRID control input must have TYPE_UINT64 or TYPE_STRING data-type');
  }
  const inputs = config.input ?? [];
  const outputs = config.output ?? [];
  if (inputs.length !== 1) throw new TritonModelException("model must have input 'INPUT' with vector shape, any length");
  const [input] = inputs;
  if (input.dims.length !== 1) throw new TritonModelException("model must have one input 'INPUT' with vector shape, any length");
  if (input.data_type !== 'TYPE_INT32') throw new TritonModelException('model input must have TYPE_INT32 data-type');
  if (input.name !== 'INPUT') throw new TritonModelException("model input must be named 'INPUT'");
  if (outputs.length !== 1) throw new TritonModelException("model must have one output 'OUTPUT' with vector shape, any length");
  const [output] = outputs;
  if (output.dims.length !== 1 || Number(output.dims[0]) !== Number(input.dims[0])) {
    throw new TritonModelException("model must have output 'OUTPUT' with shape matching 'INPUT'");
  }
  if (output.data_type !== 'TYPE_INT32') throw new TritonModelException('model output must have TYPE_INT32 data-type');
  if (output.name !== 'OUTPUT') throw new TritonModelException("model output must be named 'OUTPUT'");
  return corridType;
}

/** A string correlation id as an integer the way std::stoi reads it, or undefined when it does not read as one. */
function parseStringId(text) {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= -2147483648 && n <= 2147483647 ? n : undefined;
}

export default class DynaSequence {
  initialize(args) {
    const config = JSON.parse(args.model_config);
    this.corridIsString = validate(config) === 'TYPE_STRING';
    this.batching = config.max_batch_size > 0;
    this.maxRequests = Math.max(1, config.max_batch_size);
    this.delayMs = Number.parseInt(config.parameters?.execute_delay_ms?.string_value ?? '0', 10) || 0;
    // Correlation id (a uint64 as a bigint) -> accumulator.
    this.accumulators = new Map();
  }

  async execute(requests) {
    if (requests.length > this.maxRequests) throw new TritonModelException('unable to execute batch larger than max-batch-size');
    if (this.delayMs > 0) await sleep(this.delayMs);
    return requests.map((request) => this.step(request));
  }

  step(request) {
    const input = getInputTensorByName(request, 'INPUT');
    const shape = input.shape();
    if (this.batching && shape.length > 0 && shape[0] !== 1) {
      return new InferenceResponse([], new TritonError('unable to execute more than one timestep at a time', TritonError.UNSUPPORTED));
    }
    const start = getInputTensorByName(request, 'START').asArray()[0];
    const end = getInputTensorByName(request, 'END').asArray()[0];
    const ready = getInputTensorByName(request, 'READY').asArray()[0];
    const corridTensor = getInputTensorByName(request, 'CORRID');
    let corrid;
    if (this.corridIsString) {
      const n = parseStringId(corridTensor.asStrings()[0]);
      if (n === undefined) {
        return new InferenceResponse([], new TritonError('dyna sequence backend expects correlation ID to be decodable into an integer', TritonError.INVALID_ARG));
      }
      corrid = BigInt.asUintN(64, BigInt(n));
    } else {
      corrid = BigInt.asUintN(64, BigInt(corridTensor.asArray()[0]));
    }
    if (!ready) return new InferenceResponse([]);

    const values = input.asArray();
    let acc = start ? 0 : (this.accumulators.get(corrid) ?? 0);
    for (const v of values) acc = (acc + v) | 0;
    if (end) {
      acc = (acc + Number(BigInt.asIntN(32, corrid))) | 0;
      this.accumulators.delete(corrid);
    } else {
      this.accumulators.set(corrid, acc);
    }
    return new InferenceResponse([new Tensor('OUTPUT', new Int32Array(values.length).fill(acc), shape)]);
  }
}
