/**
 * The Python backend's refusals with Triton's words: python_backend's stub (pb_stub.cc), response sender
 * (response_sender.cc), triton_python_backend_utils.py (ModelConfig during auto_complete_config), its custom
 * metrics (metric.cc, with core metrics.cc's reasons), and the errors a model hands back. Each row names a model
 * of the repository below and how a client meets the refusal: loading the model, or one request to it.
 */
import type { TritonMessage } from '../../helpers/triton-messages.js';

export interface PythonRefusal extends TritonMessage {
  /** The model's folder in PYTHON_REFUSAL_MODELS. */
  readonly model: string;
  /**
   * load: RepositoryModelLoad fails; infer: ModelInfer with MODE fails; stream: ModelStreamInfer with MODE
   * answers an error; note: ModelInfer with MODE answers, then MODE 9 returns the refusal the model caught.
   */
  readonly on: 'load' | 'infer' | 'stream' | 'note';
  readonly mode?: number;
  /** The server's --backend-config=python settings, for rows about them (a server of their own). */
  readonly backendConfig?: Readonly<Record<string, string>>;
}

const AC = 'python_backend triton_python_backend_utils.py ModelConfig';

export const PYTHON_REFUSALS: readonly PythonRefusal[] = [
  // Loading.
  { source: 'python_backend model_context.cc StubSetup (the model module has no TritonPythonModel: Python\'s AttributeError)', refusal: 'model.py defines no TritonPythonModel class', words: "has no attribute 'TritonPythonModel'", model: 'no_class', on: 'load' },
  { source: 'python_backend model_context.cc StubSetup', refusal: 'default_model_filename does not end in .py', words: 'Model name must end with \'.py\'. Model name is "model.txt".', model: 'not_py', on: 'load' },
  { source: 'python_backend pb_stub.cc RunCommand InitializeRequest (the Python error and its traceback)', refusal: 'initialize() raises', words: 'ValueError: initialize refuses', model: 'init_raises', on: 'load' },
  { source: 'python_backend pb_stub.cc AutoCompleteModelConfig; server qa/L0_model_config/autofill_noplatform/python/no_return', refusal: 'auto_complete_config returns no ModelConfig', words: "auto_complete_config function in model 'ac_no_return' must return a valid pb.ModelConfig object.", model: 'ac_no_return', on: 'load' },
  { source: `${AC}.add_input; server qa/L0_model_config/autofill_noplatform/python/input_missing_name`, refusal: 'add_input without a name', words: "input in auto-complete-config function for model 'ac_input_no_name' is missing 'name' property.", model: 'ac_input_no_name', on: 'load' },
  { source: `${AC}.add_input; server qa/L0_model_config/autofill_noplatform/python/input_missing_datatype`, refusal: 'add_input without a data_type', words: "input 'INPUT0' in auto-complete-config function for model 'ac_input_no_type' is missing 'data_type' property.", model: 'ac_input_no_type', on: 'load' },
  { source: `${AC}.add_output; server qa/L0_model_config/autofill_noplatform/python/output_missing_dims`, refusal: 'add_output without dims', words: "output 'OUTPUT0' in auto-complete-config function for model 'ac_output_no_dims' is missing 'dims' property.", model: 'ac_output_no_dims', on: 'load' },
  { source: `${AC}.add_input; server qa/L0_model_config/autofill_noplatform/python/input_wrong_property`, refusal: 'add_input with an unknown property', words: "input 'INPUT1' in auto-complete-config function for model 'ac_input_extra' contains property other than 'name', 'data_type', 'dims' and 'optional'.", model: 'ac_input_extra', on: 'load' },
  { source: `${AC}.add_output; server qa/L0_model_config/autofill_noplatform/python/output_wrong_property`, refusal: 'add_output with an unknown property', words: "output 'OUTPUT0' in auto-complete-config function for model 'ac_output_extra' contains property other than 'name', 'data_type' and 'dims'.", model: 'ac_output_extra', on: 'load' },
  { source: `${AC}.add_input; server qa/L0_model_config/autofill_noplatform/python/input_mismatch_datatype`, refusal: 'add_input with a data_type other than the config\'s', words: "unable to load model 'ac_input_type', configuration expects datatype TYPE_INT32 for input 'INPUT1', model provides TYPE_FP32", model: 'ac_input_type', on: 'load' },
  { source: `${AC}.add_input; server qa/L0_model_config/autofill_noplatform/python/input_mismatch_dims`, refusal: 'add_input with dims other than the config\'s', words: "model 'ac_input_dims', tensor 'INPUT1': the model expects dims [4] but the model configuration specifies dims [16]", model: 'ac_input_dims', on: 'load' },
  { source: `${AC}.set_max_batch_size; server qa/L0_model_config/autofill_noplatform/python/conflicting_max_batch_size`, refusal: 'set_max_batch_size below the config\'s', words: "configuration specified max_batch_size 6, but in auto-complete-config function for model 'ac_batch' specified max_batch_size 4", model: 'ac_batch', on: 'load' },
  { source: `${AC}.set_dynamic_batching; server qa/L0_model_config/autofill_noplatform/python/conflicting_scheduler_sequence`, refusal: 'set_dynamic_batching on a sequence-batched config', words: "Configuration specified scheduling_choice as 'sequence_batching', but auto-complete-config function for model 'ac_scheduler' tries to set scheduling_choice as 'dynamic_batching'", model: 'ac_scheduler', on: 'load' },
  { source: `${AC}.set_model_transaction_policy; server qa/L0_model_config/autofill_noplatform/python/model_transaction_policy_invalid_args`, refusal: 'set_model_transaction_policy with an unknown property', words: "model transaction property in auto-complete-config function for model 'ac_policy_key' contains property other than 'decoupled'", model: 'ac_policy_key', on: 'load' },
  { source: `${AC}.set_model_transaction_policy; server qa/L0_model_config/autofill_noplatform/python/model_transaction_policy_mismatch`, refusal: 'set_model_transaction_policy changing the config\'s decoupled', words: "trying to change decoupled property in auto-complete-config for model 'ac_policy_change', which is already set to 'False'", model: 'ac_policy_change', on: 'load' },
  { source: 'python_backend pb_env.cc EnvironmentManager::ExtractIfNotExtracted', refusal: 'EXECUTION_ENV_PATH names nothing', words: 'Failed to get the canonical path for /nonexistent-nereid-env/env.tar.gz.', model: 'env_missing', on: 'load' },
  { source: 'python_backend python_be.cc TRITONBACKEND_Initialize', refusal: 'shm-default-byte-size below 1 MiB', words: "shm-default-byte-size can't be smaller than 4 MiBs", model: 'identity', on: 'load', backendConfig: { 'shm-default-byte-size': '1000' } },
  { source: 'python_backend python_be.cc TRITONBACKEND_Initialize', refusal: 'shm-growth-byte-size of zero', words: "shm-growth-byte-size can't be smaller than or equal to zero.", model: 'identity', on: 'load', backendConfig: { 'shm-growth-byte-size': '0' } },
  { source: 'python_backend python_be.cc TRITONBACKEND_Initialize', refusal: 'an empty shm-region-prefix-name', words: 'shm-region-prefix-name must at least contain one character.', model: 'identity', on: 'load', backendConfig: { 'shm-region-prefix-name': '' } },
  // execute() and what it returns.
  { source: 'python_backend pb_stub.cc ProcessRequests', refusal: 'TritonPythonModel has no execute', words: 'does not implement `execute` method.', model: 'no_execute', on: 'infer', mode: 0 },
  { source: 'python_backend pb_stub.cc ProcessReturnedResponses', refusal: 'execute returns something other than a list', words: "Failed to process the request(s) for model 'refusals', message: Expected a list in the execute return, found type '<class 'dict'>'.", model: 'refusals', on: 'infer', mode: 1 },
  { source: 'python_backend pb_stub.cc ProcessReturnedResponses', refusal: 'execute returns more responses than requests', words: 'Number of InferenceResponse objects do not match the number of InferenceRequest objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:2', model: 'refusals', on: 'infer', mode: 2 },
  { source: 'python_backend pb_stub.cc ProcessReturnedResponses', refusal: 'execute returns a list holding something other than an InferenceResponse', words: "Expected an 'InferenceResponse' object in the execute function return list, found type '<class 'str'>'.", model: 'refusals', on: 'infer', mode: 3 },
  { source: 'python_backend pb_stub.cc ProcessReturnedResponses; server qa/L0_backend_python/response_sender test_decoupled_one_response_on_return', refusal: 'a decoupled execute returns a list', words: "Python model 'decoupled_returns' is using the decoupled mode and the execute function must return None.", model: 'decoupled_returns', on: 'stream', mode: 0 },
  // The response sender.
  { source: 'python_backend response_sender.cc AssertResponseSenderArgumentsWellFormed', refusal: 'send with a flag other than 0 or FINAL', words: 'Unable to send response. Unsupported flag provided.', model: 'refusals', on: 'infer', mode: 4 },
  { source: 'python_backend response_sender.cc AssertResponseSenderArgumentsWellFormed', refusal: 'send without a response and without FINAL', words: 'Inference Response object must be provided when the response flags is set to zero.', model: 'refusals', on: 'infer', mode: 5 },
  { source: 'python_backend response_sender.cc UpdateStateAndCounters; server qa/L0_backend_python/response_sender test_non_decoupled_zero_response_pre_return', refusal: 'a model that is not decoupled sends FINAL before a response', words: 'Unable to send response. Non-decoupled model cannot send complete final before sending a response.', model: 'refusals', on: 'infer', mode: 6 },
  { source: 'python_backend response_sender.cc UpdateStateAndCounters; server qa/L0_backend_python/response_sender test_non_decoupled_two_response_pre_return', refusal: 'a model that is not decoupled sends a second response', words: 'Unable to send response. Non-decoupled model cannot send more than one response.', model: 'refusals', on: 'infer', mode: 7 },
  { source: 'python_backend response_sender.cc UpdateStateAndCounters', refusal: 'send after FINAL', words: 'Unable to send response. Response sender has been closed.', model: 'refusals', on: 'note', mode: 8 },
  // Responses and errors a model makes.
  { source: 'python_backend pb_utils / infer_response (InferenceResponse parameters); server qa/L0_backend_python/response_parameters', refusal: 'response parameters of a refused type', words: "Expect parameters values to have type bool/int/str, found type <class 'float'>", model: 'refusals', on: 'infer', mode: 10 },
  { source: 'python_backend python_be.cc ProcessRequests (a response holding a TritonError: its message and code reach the client)', refusal: 'a response holding a TritonError', words: 'the model refuses this request', model: 'refusals', on: 'infer', mode: 11 },
  { source: 'core model_repository_manager (BLS through python_backend request_executor.cc: the error response of exec())', refusal: 'BLS request to an unknown model', words: "Request for unknown model: 'no_such_model' is not found", model: 'refusals', on: 'infer', mode: 14 },
  // Tensors.
  { source: 'python_backend pb_tensor.cc PbTensor::PbTensor', refusal: 'a tensor with an empty name', words: 'Tensor name cannot be an empty string.', model: 'refusals', on: 'infer', mode: 16 },
  { source: 'python_backend pb_tensor.cc PbTensor::ToDLPack', refusal: 'to_dlpack of a BYTES tensor', words: 'DLPack does not have support for string tensors.', model: 'refusals', on: 'infer', mode: 17 },
  { source: 'python_backend pb_tensor.cc PbTensor::FromDLPackCapsule', refusal: 'from_dlpack of a tensor that is not C-contiguous', words: 'DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in C-Order are supported.', model: 'refusals', on: 'infer', mode: 18 },
  { source: 'python_backend pb_tensor.cc PbTensor::FromDLPack', refusal: 'from_dlpack of something that is no DLPack tensor', words: 'Provided tensor is not supported. Tensor must be a DLPack capsule', model: 'refusals', on: 'infer', mode: 19 },
  // Custom metrics.
  { source: 'python_backend metric.cc SendIncrementRequest; core metrics.cc Metric::Increment', refusal: 'a counter incremented by a negative value', words: 'Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by non-negative values.', model: 'refusals', on: 'infer', mode: 12 },
  { source: 'python_backend metric.cc SendSetValueRequest; core metrics.cc Metric::Set', refusal: 'a counter set', words: 'Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set', model: 'refusals', on: 'infer', mode: 13 },
  { source: 'python_backend metric_family.cc MetricFamily::CreateMetric', refusal: 'a metric\'s labels that are no dictionary', words: 'Failed to create metric. Labels must be a dictionary.', model: 'refusals', on: 'infer', mode: 20 },
  // Last: the stub is started again after it.
  { source: 'python_backend stub_launcher.cc ReceiveMessageFromStub (the instance of a default group is <model>_0)', refusal: 'the stub process dies during execute', words: "Stub process 'refusals_0' is not healthy.", model: 'refusals', on: 'infer', mode: 15 },
];

const EXECUTE_OK = `
    def execute(self, requests):
        return [pb_utils.InferenceResponse(output_tensors=[]) for _ in requests]
`;

const HEAD = 'import numpy as np\nimport triton_python_backend_utils as pb_utils\n\nFINAL = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL\n';

/** An auto_complete_config model: its config's body and what its hook does to the ModelConfig `c`. */
function autoComplete(configBody: string, hook: string): { config: string; 'model.py': string } {
  return {
    config: configBody,
    'model.py': `${HEAD}

class TritonPythonModel:
    @staticmethod
    def auto_complete_config(c):
        ${hook}
        return c
${EXECUTE_OK}`,
  };
}

const IO_ONE = 'input [ { name: "MODE" data_type: TYPE_INT32 dims: [ 1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] }, { name: "NOTE" data_type: TYPE_STRING dims: [ -1 ] } ]';

/** The models of the rows, by folder: config.pbtxt's body (after name and backend) and version 1's files. */
export const PYTHON_REFUSAL_MODELS: Readonly<Record<string, { config: string; [file: string]: string }>> = {
  no_class: { config: '', 'model.py': `${HEAD}\n\nclass SomeOtherModel:\n    pass\n` },
  not_py: { config: 'default_model_filename: "model.txt"', 'model.txt': `${HEAD}\n\nclass TritonPythonModel:\n${EXECUTE_OK}` },
  init_raises: { config: '', 'model.py': `${HEAD}\n\nclass TritonPythonModel:\n    def initialize(self, args):\n        raise ValueError("initialize refuses")\n${EXECUTE_OK}` },
  ac_no_return: { config: '', 'model.py': `${HEAD}\n\nclass TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n        return None\n${EXECUTE_OK}` },
  ac_input_no_name: autoComplete('', 'c.add_input({"data_type": "TYPE_FP32", "dims": [4]})'),
  ac_input_no_type: autoComplete('', 'c.add_input({"name": "INPUT0", "dims": [4]})'),
  ac_output_no_dims: autoComplete('', 'c.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32"})'),
  ac_input_extra: autoComplete('', 'c.add_input({"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4], "is_shape_tensor": False})'),
  ac_output_extra: autoComplete('', 'c.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [4], "optional": True})'),
  ac_input_type: autoComplete('input [ { name: "INPUT1" data_type: TYPE_INT32 dims: [ 4 ] } ]', 'c.add_input({"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]})'),
  ac_input_dims: autoComplete('input [ { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] } ]', 'c.add_input({"name": "INPUT1", "data_type": "TYPE_FP32", "dims": [4]})'),
  ac_batch: autoComplete('max_batch_size: 6', 'c.set_max_batch_size(4)'),
  ac_scheduler: autoComplete('sequence_batching { }', 'c.set_dynamic_batching()'),
  ac_policy_key: autoComplete('', 'c.set_model_transaction_policy({"streaming": True})'),
  ac_policy_change: autoComplete('model_transaction_policy { decoupled: false }', 'c.set_model_transaction_policy({"decoupled": True})'),
  env_missing: { config: 'parameters { key: "EXECUTION_ENV_PATH" value { string_value: "/nonexistent-nereid-env/env.tar.gz" } }', 'model.py': `${HEAD}\n\nclass TritonPythonModel:\n${EXECUTE_OK}` },
  identity: { config: '', 'model.py': `${HEAD}\n\nclass TritonPythonModel:\n${EXECUTE_OK}` },
  no_execute: { config: IO_ONE, 'model.py': `${HEAD}\n\nclass TritonPythonModel:\n    def initialize(self, args):\n        pass\n` },
  decoupled_returns: {
    config: `${IO_ONE}\nmodel_transaction_policy { decoupled: true }`,
    'model.py': `${HEAD}\n\nclass TritonPythonModel:\n${EXECUTE_OK}`,
  },
  refusals: {
    config: IO_ONE,
    'model.py': `import os

${HEAD}

def out():
    return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("OUT", np.array([1], np.int32))])


class TritonPythonModel:
    """MODE picks a refusal; 9 returns the refusal mode 8 caught, as NOTE."""

    def initialize(self, args):
        self.note = ""
        self.family = pb_utils.MetricFamily("python_refusals_total", "refusals", pb_utils.MetricFamily.COUNTER)
        self.counter = self.family.Metric()

    def execute(self, requests):
        request = requests[0]
        mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
        if mode == 1:
            return {"not": "a list"}
        if mode == 2:
            return [out(), out()]
        if mode == 3:
            return ["not a response"]
        if mode == 4:
            request.get_response_sender().send(out(), flags=2)
        if mode == 5:
            request.get_response_sender().send(None, flags=0)
        if mode == 6:
            request.get_response_sender().send(flags=FINAL)
        if mode == 7:
            sender = request.get_response_sender()
            sender.send(out())
            sender.send(out())
        if mode == 8:
            sender = request.get_response_sender()
            sender.send(out(), flags=FINAL)
            try:
                sender.send(flags=FINAL)
            except pb_utils.TritonModelException as e:
                self.note = str(e)
            return [None]
        if mode == 9:
            note = pb_utils.Tensor("NOTE", np.array([self.note.encode()], np.object_))
            return [pb_utils.InferenceResponse(output_tensors=[note])]
        if mode == 10:
            return [pb_utils.InferenceResponse(output_tensors=[], parameters={"k": 1.5})]
        if mode == 11:
            error = pb_utils.TritonError("the model refuses this request", pb_utils.TritonError.INVALID_ARG)
            return [pb_utils.InferenceResponse(error=error)]
        if mode == 12:
            self.counter.increment(-1)
        if mode == 13:
            self.counter.set(1)
        if mode == 14:
            bls = pb_utils.InferenceRequest(model_name="no_such_model", inputs=[], requested_output_names=[]).exec()
            return [pb_utils.InferenceResponse(error=bls.error())]
        if mode == 15:
            os._exit(3)
        if mode == 16:
            pb_utils.Tensor("", np.array([1], np.int32))
        if mode == 17:
            pb_utils.Tensor("S", np.array([b"a"], np.object_)).to_dlpack()
        if mode == 18:
            pb_utils.Tensor.from_dlpack("X", np.arange(6, dtype=np.int32).reshape(2, 3)[:, ::2])
        if mode == 19:
            pb_utils.Tensor.from_dlpack("X", [1, 2, 3])
        if mode == 20:
            self.family.Metric(labels=["not", "a", "dict"])
        return [out()]
`,
  },
};
