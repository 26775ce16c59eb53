// Triton's simple_dyna_sequence (server docs/examples/model_repository, made by qa/common/
// gen_qa_dyna_sequence_models.py for models with a batch dimension) as a JavaScript model. It does not
// accumulate: each row of OUTPUT is
//
//   READY ? INPUT + START + END * CORRID : 0
//
// with CORRID (UINT64) truncated to 32 bits and the sum wrapping around as a 32-bit integer. So a sequence's
// first request answers INPUT + 1, the middle ones INPUT, the last one INPUT + its correlation id, which is
// what Triton's sequence client examples check with --dyna. (The accumulating model of those examples is
// simple_string_dyna_sequence, Triton's dyna_sequence backend.)
import { InferenceResponse, Tensor, getInputTensorByName } from 'nereid/backend-utils';

export default class SimpleDynaSequence {
  execute(requests) {
    return requests.map((request) => {
      const input = getInputTensorByName(request, 'INPUT');
      const values = input.asArray();
      const start = getInputTensorByName(request, 'START').asArray();
      const end = getInputTensorByName(request, 'END').asArray();
      const ready = getInputTensorByName(request, 'READY').asArray();
      const corrid = getInputTensorByName(request, 'CORRID').asArray();
      // Controls have one value per batch row; INPUT has `perRow` values in each row.
      const rows = start.length;
      const perRow = values.length / rows;
      const out = new Int32Array(values.length);
      for (let r = 0; r < rows; r++) {
        if (!ready[r]) continue;
        const add = (start[r] + Math.imul(end[r], Number(BigInt.asIntN(32, BigInt(corrid[r]))))) | 0;
        for (let i = r * perRow; i < (r + 1) * perRow; i++) out[i] = (values[i] + add) | 0;
      }
      return new InferenceResponse([new Tensor('OUTPUT', out, input.shape())]);
    });
  }
}
