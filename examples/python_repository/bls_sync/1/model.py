# Triton's BLS (business logic scripting) example: execute() builds an InferenceRequest for another model,
# runs it with exec() and answers with that model's outputs.
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            model_name = pb_utils.get_input_tensor_by_name(request, "MODEL_NAME").as_numpy()[0].decode("utf-8")
            in_0 = pb_utils.get_input_tensor_by_name(request, "INPUT0")
            in_1 = pb_utils.get_input_tensor_by_name(request, "INPUT1")

            if model_name == "add_sub_torch":
                # TorchScript models name tensors <name>__<index> and this one batches: add the batch dimension.
                inputs = [pb_utils.Tensor("INPUT__0", in_0.as_numpy()[None, :]),
                          pb_utils.Tensor("INPUT__1", in_1.as_numpy()[None, :])]
                outputs = ["OUTPUT__0", "OUTPUT__1"]
            else:
                inputs = [in_0, in_1]
                outputs = ["OUTPUT0", "OUTPUT1"]

            infer_request = pb_utils.InferenceRequest(
                model_name=model_name, requested_output_names=outputs, inputs=inputs)

            # exec() blocks until the other model answers; async_exec() is its awaitable twin for async execute.
            infer_response = infer_request.exec()
            if infer_response.has_error():
                raise pb_utils.TritonModelException(infer_response.error().message())

            out_0 = pb_utils.get_output_tensor_by_name(infer_response, outputs[0]).as_numpy().reshape(4)
            out_1 = pb_utils.get_output_tensor_by_name(infer_response, outputs[1]).as_numpy().reshape(4)
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("OUTPUT0", out_0), pb_utils.Tensor("OUTPUT1", out_1)]))
        return responses
