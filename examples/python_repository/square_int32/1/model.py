# Triton's decoupled example (square_int32): every request is answered from its own thread, which sends IN
# responses, each holding IN, and then the final flag alone. execute() returns None, as a decoupled model must.
import json
import threading

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.model_config = model_config = json.loads(args["model_config"])

        using_decoupled = pb_utils.using_decoupled_model_transaction_policy(model_config)
        if not using_decoupled:
            raise pb_utils.TritonModelException(
                """the model `{}` can generate any number of responses per request,
                enable decoupled transaction policy in model configuration to
                serve this model""".format(args["model_name"]))

        out_config = pb_utils.get_output_config_by_name(model_config, "OUT")
        self.out_dtype = pb_utils.triton_string_to_numpy(out_config["data_type"])

        self.inflight_thread_count = 0
        self.inflight_thread_count_lck = threading.Lock()

    def execute(self, requests):
        for request in requests:
            self.process_request(request)

        # A decoupled model returns None: its responses go through the response senders.
        return None

    def process_request(self, request):
        in_input = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy()
        if in_input.shape != (1,):
            raise pb_utils.TritonModelException(f"expected 1 IN element, got shape {in_input.shape}")

        thread = threading.Thread(
            target=self.response_thread,
            args=(request.get_response_sender(), int(in_input[0])))
        thread.daemon = True

        with self.inflight_thread_count_lck:
            self.inflight_thread_count += 1

        thread.start()

    def response_thread(self, response_sender, count):
        for _ in range(count):
            out_output = pb_utils.Tensor("OUT", np.array([count], self.out_dtype))
            response = pb_utils.InferenceResponse(output_tensors=[out_output])
            response_sender.send(response)

        # The final flag, sent without a response.
        response_sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

        with self.inflight_thread_count_lck:
            self.inflight_thread_count -= 1

    def finalize(self):
        """Waits for the response threads still running before the model goes."""
        pb_utils.Logger.log_info("Finalize invoked")
        for _ in range(500):
            with self.inflight_thread_count_lck:
                if self.inflight_thread_count == 0:
                    break
            threading.Event().wait(0.01)
        pb_utils.Logger.log_info("Finalize complete...")
