// Triton's repeat example, decoupled: for a request with n elements in IN it sends n responses, the i'th
// after waiting DELAY[i] milliseconds, with OUT = IN[i] and IDX = i, then ends the request with the FINAL
// flag alone (no responses at all when IN has shape [0]).
//
// execute() returns after WAIT milliseconds, so the instance can take the next request while responses are
// still being sent: with WAIT below the sum of DELAY, even a single instance works on several requests at
// once and their responses interleave.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  InferenceResponse,
  Tensor,
  TritonError,
  TritonModelException,
  TRITONSERVER_RESPONSE_COMPLETE_FINAL,
  getInputTensorByName,
  getOutputConfigByName,
  tritonStringToTypedArray,
  usingDecoupledModelTransactionPolicy,
} from 'nereid/backend-utils';

export default class RepeatModel {
  initialize(args) {
    const config = JSON.parse(args.model_config);
    if (!usingDecoupledModelTransactionPolicy(config)) {
      throw new TritonModelException(
        `the model \`${args.model_name}\` can generate any number of responses per request, ` +
          'enable decoupled transaction policy in model configuration to serve this model',
      );
    }
    this.OutArray = tritonStringToTypedArray(getOutputConfigByName(config, 'OUT').data_type);
    this.IdxArray = tritonStringToTypedArray(getOutputConfigByName(config, 'IDX').data_type);
    // Response loops still running; finalize waits for them.
    this.inflight = new Set();
  }

  async execute(requests) {
    // The model does not support batching: one request per execution.
    if (requests.length !== 1) throw new TritonModelException(`unsupported batch size ${requests.length}`);
    const request = requests[0];
    const sender = request.getResponseSender();
    const input = getInputTensorByName(request, 'IN');
    const delay = getInputTensorByName(request, 'DELAY');
    const inShape = input.shape();
    const delayShape = delay.shape();
    if (inShape.length !== delayShape.length || inShape.some((d, i) => d !== delayShape[i])) {
      const error = new TritonError(`expected IN and DELAY shape to match, got [${inShape}] and [${delayShape}]`, TritonError.INVALID_ARG);
      sender.send(new InferenceResponse([], error), TRITONSERVER_RESPONSE_COMPLETE_FINAL);
      return;
    }
    // Copies: the request's tensors must not be used once execute has returned.
    const loop = this.respond(sender, Int32Array.from(input.asArray()), Uint32Array.from(delay.asArray()));
    this.inflight.add(loop);
    void loop.finally(() => this.inflight.delete(loop));

    const wait = getInputTensorByName(request, 'WAIT').asArray()[0];
    await sleep(wait);
  }

  async respond(sender, values, delays) {
    for (let idx = 0; idx < values.length; idx++) {
      await sleep(delays[idx]);
      const out = new Tensor('OUT', this.OutArray.of(values[idx]));
      const idxTensor = new Tensor('IDX', this.IdxArray.of(idx));
      sender.send(new InferenceResponse([idxTensor, out]));
    }
    // Done: the FINAL flag alone, without a response.
    sender.send(undefined, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  }

  async finalize() {
    await Promise.all(this.inflight);
  }
}
