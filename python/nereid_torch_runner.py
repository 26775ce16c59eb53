"""TorchScript models (platform pytorch_libtorch, backend pytorch) on the Python stub: a built-in model.py that
loads ``<version>/model.pt`` with torch.jit and runs it as Triton's PyTorch backend does.

Naming, as Triton's: inputs named as forward's arguments go by those; otherwise an input called ``<name>__<i>``
is the forward argument at position i; otherwise inputs go in config order. An output called ``<name>__<i>`` is
element i of what forward returns (a lone tensor is element 0), unless some output is not named so, when
outputs go in config order. Requests of one execution are concatenated along the batch dimension
(max_batch_size > 0), run once, and split back.
"""

import ctypes
import json
import os

import numpy as np
import torch

import triton_python_backend_utils as pb_utils


def _index(name):
    """The index of a ``<name>__<index>`` name: the digits after its first ``__`` (none reads as 0)."""
    digits = name[name.index("__") + 2:]
    return int(digits) if digits else 0


def _named_index(names):
    """Every name has a ``__`` followed by digits only; otherwise Triton's backend orders by config position."""
    return all("__" in n and all(c.isdigit() for c in n[n.index("__") + 2:]) for n in names)


def _controls(config):
    """How many sequence control inputs the config names (each kind counts once, as Triton counts them)."""
    kinds = {c.get("kind", "CONTROL_SEQUENCE_START")
             for ci in config.get("sequence_batching", {}).get("control_input", []) for c in ci.get("control", [])}
    return len(kinds)


def _input_order(config, module, model_name):
    """Config input names in the order forward takes them, by Triton's PyTorch backend rules: the config must
    name as many inputs as forward has arguments (batch inputs, sequence controls and states included); names
    that are all forward's argument names go by those, else names that all read ``<name>__<index>`` go by the
    index, else inputs go by their position in the config."""
    sequence = config.get("sequence_batching", {})
    for kind in ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID"):
        for ci in sequence.get("control_input", []):
            if any(c.get("kind", "CONTROL_SEQUENCE_START") == kind for c in ci.get("control", [])):
                if not _named_index([ci["name"]]):
                    raise pb_utils.TritonModelException(
                        f"input '{ci['name']}' does not follow <name>__<index> naming convention.")
                break
    names = [i["name"] for i in config.get("input", [])]
    arguments = list(module.forward.schema.arguments)
    if arguments and isinstance(arguments[0].type, torch._C.ClassType):
        arguments = arguments[1:]
    dict_input = len(arguments) == 1 and isinstance(arguments[0].type, torch._C.DictType)
    if not dict_input and arguments:
        expected = len(names) + len(config.get("batch_input", [])) + _controls(config) + len(sequence.get("state", []))
        if len(arguments) != expected:
            raise pb_utils.TritonModelException(
                f"unable to load model '{model_name}', configuration expects {expected} inputs, "
                f"model provides {len(arguments)}")
    if not names:
        raise pb_utils.TritonModelException("model configuration must contain at least one input, none were specified.")
    argument_names = [a.name for a in arguments]
    if dict_input:
        position = {n: i for i, n in enumerate(names)}
    elif all(n in argument_names for n in names):
        position = {n: argument_names.index(n) for n in names}
    elif _named_index(names):
        position = {n: _index(n) for n in names}
    else:
        pb_utils.Logger.log_warn(
            f'Input "{names[-1]}" or previous input(s) are neither an input argument to the model "{model_name}" '
            "nor follow the <name>__<index> naming convention. Defaulting to strict ordering of model inputs.")
        position = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: position[n])


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

        self.input_order = _input_order(config, self.module, args.get("model_name", ""))
        outputs = config.get("output", [])
        if not outputs:
            raise pb_utils.TritonModelException(
                "model configuration must contain at least one output, none were specified.")
        named = _named_index([o["name"] for o in outputs])
        self.outputs = []
        for position, o in enumerate(outputs):
            dtype = pb_utils.triton_string_to_numpy(o["data_type"])
            self.outputs.append((o["name"], _index(o["name"]) if named else position, dtype))

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
