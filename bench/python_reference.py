"""The reference side of bench/python.mjs: a model's own work timed inside Python, with no server around it.

Reads commands on stdin, one per line, and answers one line each:
  add_sub N      -> the median, in microseconds, of N calls of add_sub's execute() on one request
                    (numpy work and pb_utils objects, as the stub runs it, without the server)
  torch PATH N B [T] -> the mean, in microseconds, of N calls of torch.jit's forward in a loop on a batch of B
                    rows of 256 (the model.pt at PATH): the wall time of the loop over N, as throughput's
                    reference; with T, torch and its OpenBLAS on T threads (what INTRA_OP_THREAD_COUNT sets in
                    Nereid's runner), else their defaults
"""

import importlib.util
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

import triton_python_backend_utils as pb_utils  # noqa: E402

EXAMPLES = os.path.join(ROOT, "examples", "python_repository")


def load_add_sub():
    spec = importlib.util.spec_from_file_location("add_sub_model", os.path.join(EXAMPLES, "add_sub", "1", "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.TritonPythonModel()
    config = {"output": [{"name": "OUTPUT0", "data_type": "TYPE_FP32"}, {"name": "OUTPUT1", "data_type": "TYPE_FP32"}]}
    model.initialize({"model_config": json.dumps(config)})
    return model


def time_add_sub(model, n):
    a = np.array([1, 2, 3, 4], np.float32)
    b = np.array([10, 20, 30, 40], np.float32)
    samples = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        request = pb_utils.InferenceRequest(
            inputs=[pb_utils.Tensor("INPUT0", a), pb_utils.Tensor("INPUT1", b)],
            requested_output_names=["OUTPUT0", "OUTPUT1"], model_name="add_sub")
        model.execute([request])
        samples.append(time.perf_counter_ns() - t0)
    return statistics.median(samples) / 1000


def time_torch(state, path, n, batch, threads=None):
    import torch
    if threads is not None and state.get("threads") != threads:
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import nereid_torch_runner
        torch.set_num_threads(threads)
        nereid_torch_runner._set_blas_threads(threads)
        state["threads"] = threads
    if state.get("path") != path:
        state["module"] = torch.jit.load(path)
        state["path"] = path
    module = state["module"]
    # The values bench/python.mjs sends.
    x = torch.from_numpy((((np.arange(batch * 256) * 7919) % 1000) / 1000).astype(np.float32).reshape(batch, 256))
    # Wall time over the whole loop, as bench/python.mjs times Nereid's side: a throughput, so the calls a
    # busy machine slows down count, as they do through Nereid (a median of single calls would leave them out).
    with torch.inference_mode():
        t0 = time.perf_counter_ns()
        for _ in range(n):
            module(x)
        total = time.perf_counter_ns() - t0
    return total / n / 1000


def main():
    model = load_add_sub()
    state = {}
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "add_sub":
            print(time_add_sub(model, int(words[1])), flush=True)
        elif words[0] == "torch":
            threads = int(words[4]) if len(words) > 4 else None
            print(time_torch(state, words[1], int(words[2]), int(words[3]), threads), flush=True)


if __name__ == "__main__":
    main()
