"""TorchScript models (platform pytorch_libtorch, backend pytorch) on the Python stub: a built-in model.py that
loads ``<version>/model.pt`` with torch.jit and runs it as Triton's PyTorch backend does.

Naming, as Triton's: an input called ``<name>__<i>`` is the forward argument at position i, an output called
``<name>__<i>`` is element i of what forward returns (a lone tensor is element 0). Without that convention,
inputs go by forward's argument names and outputs in config order. Requests of one execution are concatenated
along the batch dimension (max_batch_size > 0), run once, and split back.
"""

import ctypes
import json
import os
import re

import numpy as np
import torch

import triton_python_backend_utils as pb_utils

_INDEXED = re.compile(r"^(.*)__(\d+)$")


def _index(name):
    m = _INDEXED.match(name)
    return int(m.group(2)) if m else None


def _openblas():
    """The OpenBLAS this process loaded (Debian's torch and numpy do their matrix products in it), or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "openblas" in line and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
            if hasattr(lib, "openblas_set_num_threads") and hasattr(lib, "openblas_get_num_threads"):
                return lib
        except OSError:
            continue
    return None


def _set_blas_threads(n):
    """torch.set_num_threads sizes torch's own pool (and MKL's), not an OpenBLAS torch was built against, which
    keeps one thread per core: INTRA_OP_THREAD_COUNT reaches it here, so a count chosen to keep instances off each
    other's cores holds for the matrix products too."""
    lib = _openblas()
    if lib is not None:
        lib.openblas_set_num_threads(n)


def _blas_threads():
    lib = _openblas()
    return lib.openblas_get_num_threads() if lib is not None else None


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        self.batching = config.get("max_batch_size", 0) > 0
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        if params.get("INTRA_OP_THREAD_COUNT"):
            torch.set_num_threads(int(params["INTRA_OP_THREAD_COUNT"]))
            _set_blas_threads(int(params["INTRA_OP_THREAD_COUNT"]))
        if params.get("INTER_OP_THREAD_COUNT"):
            torch.set_num_interop_threads(int(params["INTER_OP_THREAD_COUNT"]))
        path = os.path.join(args["model_repository"], args["model_version"],
                            config.get("default_model_filename") or "model.pt")
        self.module = torch.jit.load(path, map_location="cpu")
        self.module.eval()
        blas = _blas_threads()
        pb_utils.Logger.log_verbose(f"loaded {path} with torch {torch.__version__}, "
                                    f"{torch.get_num_threads()} intra-op thread(s)"
                                    + (f", OpenBLAS {blas} thread(s)" if blas is not None else ""))

        inputs = [i["name"] for i in config.get("input", [])]
        if all(_index(n) is not None for n in inputs):
            self.input_order = sorted(inputs, key=_index)
        else:
            # Forward's own argument names (after self), as newer Triton PyTorch backends allow.
            arguments = [a.name for a in self.module.forward.schema.arguments[1:]]
            missing = [n for n in inputs if n not in arguments]
            if missing:
                raise pb_utils.TritonModelException(
                    f"inputs {missing} are neither named <name>__<index> nor arguments of forward {arguments}")
            self.input_order = [a for a in arguments if a in inputs]
        self.outputs = []
        for position, o in enumerate(config.get("output", [])):
            index = _index(o["name"])
            dtype = pb_utils.triton_string_to_numpy(o["data_type"])
            self.outputs.append((o["name"], index if index is not None else position, dtype))

    def execute(self, requests):
        arrays = [[pb_utils.get_input_tensor_by_name(r, n).as_numpy() for n in self.input_order] for r in requests]
        if self.batching and len(requests) > 1:
            sizes = [a[0].shape[0] for a in arrays]
            batch = [np.concatenate([a[i] for a in arrays]) for i in range(len(self.input_order))]
        else:
            sizes = None
        results = []
        with torch.inference_mode():
            if sizes is None:
                for a in arrays:
                    results.append(self.run(a))
            else:
                outputs = self.run(batch)
                start = 0
                for size in sizes:
                    results.append([o[start:start + size] for o in outputs])
                    start += size
        responses = []
        for request, outputs in zip(requests, results):
            wanted = set(request.requested_output_names())
            tensors = [pb_utils.Tensor(name, outputs[k]) for k, (name, _, _) in enumerate(self.outputs) if name in wanted]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def run(self, arrays):
        result = self.module(*[torch.from_numpy(a) for a in arrays])
        if isinstance(result, torch.Tensor):
            result = (result,)
        out = []
        for name, index, dtype in self.outputs:
            if index >= len(result):
                raise pb_utils.TritonModelException(f"output {name} asks for result {index} of a forward returning {len(result)}")
            out.append(result[index].detach().numpy().astype(dtype, copy=False))
        return out
