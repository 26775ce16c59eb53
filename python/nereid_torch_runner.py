"""TorchScript models (platform pytorch_libtorch, backend pytorch) on the Python stub: a built-in model.py that
loads ``<version>/model.pt`` with torch.jit and runs it as Triton's PyTorch backend does.

Naming, as Triton's: inputs named as forward's arguments go by those; otherwise an input called ``<name>__<i>``
is the forward argument at position i; otherwise inputs go in config order. An output called ``<name>__<i>`` is
element i of what forward returns (a lone tensor is element 0), unless some output is not named so, when
outputs go in config order. Requests of one execution are concatenated along the batch dimension
(max_batch_size > 0), run once, and split back.

Beyond the config's inputs forward takes, as Triton's backend gives them: each ``batch_input`` (made here from
the shapes of the batch), each sequence control input (START, END, READY, CORRID, at the ``__<index>`` of its
name) and each implicit state's input (``sequence_batching.state``, at the index of its ``input_name``); a
state's ``output_name`` is the forward result at its index. A TYPE_STRING input or state reaches forward as a
List[str] and a List[str] result answers a TYPE_STRING output. A ragged input (``allow_ragged_batch``) reaches
forward flat: every request's elements one after another, so requests of different shapes share a batch.
"""

import ctypes
import json
import os

import numpy as np
import torch

import triton_python_backend_utils as pb_utils


def _index(name):
    """The index of a ``<name>__<index>`` name: the digits after its first ``__`` (a name without them reads
    as 0)."""
    digits = name[name.index("__") + 2:] if "__" in name else ""
    return int(digits) if digits.isdigit() else 0


def _named_index(names):
    """Every name has a ``__`` followed by digits only; otherwise Triton's backend orders by config position."""
    return all("__" in n and all(c.isdigit() for c in n[n.index("__") + 2:]) for n in names)


# The config data types a torch tensor can hold (torch has no unsigned type wider than 8 bits).
_TORCH_TYPES = {"TYPE_BOOL", "TYPE_UINT8", "TYPE_INT8", "TYPE_INT16", "TYPE_INT32", "TYPE_INT64", "TYPE_FP16",
                "TYPE_FP32", "TYPE_FP64"}


def _control_names(sequence):
    """The control inputs' names, each kind once (the first input that has it), as Triton's backend finds them."""
    names = []
    for kind in ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY", "CONTROL_SEQUENCE_CORRID"):
        for ci in sequence.get("control_input", []):
            controls = [c for c in ci.get("control", []) if c.get("kind", "CONTROL_SEQUENCE_START") == kind]
            if controls:
                if not _named_index([ci["name"]]):
                    raise pb_utils.TritonModelException(
                        f"input '{ci['name']}' does not follow <name>__<index> naming convention.")
                dtype = controls[0].get("data_type", "TYPE_UINT64")
                if kind == "CONTROL_SEQUENCE_CORRID" and dtype not in _TORCH_TYPES:
                    raise pb_utils.TritonModelException(
                        f"input '{ci['name']}' type '{dtype}' is not supported by PyTorch.")
                names.append(ci["name"])
                break
    return names


def _check_state_names(sequence, convention_named, model_name):
    """Triton's backend takes state inputs and outputs by the index in their names only: every input and output
    of a model with state must read ``<name>__<index>``."""
    states = sequence.get("state", [])
    if states and not convention_named:
        raise pb_utils.TritonModelException(
            f"PyTorch model '{model_name}' is using sequence batching with state but not all inputs and outputs "
            "follow the <name>__<index> naming convention. ")
    for st in states:
        for key in ("input_name", "output_name"):
            if not _named_index([st[key]]):
                raise pb_utils.TritonModelException(
                    f"PyTorch model '{model_name}' is using sequence batching with state but state '{st[key]}' "
                    "does not follow the <name>__<index> naming convention. ")


def _input_order(config, module, model_name):
    """Returns (names in the order forward takes them, whether forward takes one dict), by Triton's PyTorch
    backend rules: the config must name as many inputs as forward has arguments (batch inputs, sequence controls
    and states included); config inputs that are all forward's argument names go by those, else names that all
    read ``<name>__<index>`` go by the index, else inputs go by their position in the config. Batch inputs follow
    the same rule (by position after the config's inputs); controls and states go by their index."""
    sequence = config.get("sequence_batching", {})
    controls = _control_names(sequence)
    names = [i["name"] for i in config.get("input", [])]
    targets = [t for b in config.get("batch_input", []) for t in b.get("target_name", [])]
    states = [st["input_name"] for st in sequence.get("state", [])]
    arguments = list(module.forward.schema.arguments)
    if arguments and isinstance(arguments[0].type, torch._C.ClassType):
        arguments = arguments[1:]
    dict_input = len(arguments) == 1 and isinstance(arguments[0].type, torch._C.DictType)
    if not dict_input and arguments:
        expected = len(names) + len(config.get("batch_input", [])) + len(controls) + len(states)
        if len(arguments) != expected:
            raise pb_utils.TritonModelException(
                f"unable to load model '{model_name}', configuration expects {expected} inputs, "
                f"model provides {len(arguments)}")
    if not names:
        raise pb_utils.TritonModelException("model configuration must contain at least one input, none were specified.")
    argument_names = [a.name for a in arguments]
    if dict_input:
        position = {n: i for i, n in enumerate(names + targets + controls + states)}
        return sorted(position, key=lambda n: position[n]), True
    if all(n in argument_names for n in names):
        # Names forward does not take are left out, as Triton's backend leaves them out of its input map.
        position = {n: argument_names.index(n) for n in names + targets if n in argument_names}
        named = False
    elif _named_index(names):
        position = {n: _index(n) for n in names + targets}
        named = True
    else:
        pb_utils.Logger.log_warn(
            f'Input "{names[-1]}" or previous input(s) are neither an input argument to the model "{model_name}" '
            "nor follow the <name>__<index> naming convention. Defaulting to strict ordering of model inputs.")
        position = {n: i for i, n in enumerate(names + targets)}
        named = False
    _check_state_names(sequence, named, model_name)
    for n in controls + states:
        position[n] = _index(n)
    return sorted(position, key=lambda n: position[n]), False


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


def _batch_input(kind, dtype, shapes):
    """A batch input's value from the full shapes (batch dimension first) of its source in each request, as
    Triton's BackendInputCollector makes it."""
    counts = [int(np.prod(s)) for s in shapes]
    if kind == "BATCH_ELEMENT_COUNT":
        values = counts
    elif kind == "BATCH_ACCUMULATED_ELEMENT_COUNT":
        values = list(np.cumsum(counts))
    elif kind == "BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO":
        values = [0] + list(np.cumsum(counts))
    elif kind == "BATCH_MAX_ELEMENT_COUNT_AS_SHAPE":
        values = [0] * max(counts)
    else:  # BATCH_ITEM_SHAPE, BATCH_ITEM_SHAPE_FLATTEN: each row's shape without the batch dimension
        rows = [list(s[1:]) for s in shapes for _ in range(s[0])]
        values = np.array(rows, dtype=dtype).reshape(len(rows), len(shapes[0]) - 1)
        return values if kind == "BATCH_ITEM_SHAPE" else values.reshape(-1)
    return np.array(values, dtype=dtype)


def _feeds(config, order):
    """What each forward argument is made from: ("input", name) a request input, ("ragged", name) a ragged one,
    ("strings", name) a TYPE_STRING input or state (a List[str], as Triton's backend gives one),
    ("batch", (kind, source, dtype)) a batch input."""
    strings = {i["name"] for i in config.get("input", []) if i.get("data_type") == "TYPE_STRING"}
    strings.update(st["input_name"] for st in config.get("sequence_batching", {}).get("state", [])
                   if st.get("data_type") == "TYPE_STRING")
    ragged = {i["name"] for i in config.get("input", []) if i.get("allow_ragged_batch")}
    batch = {}
    for b in config.get("batch_input", []):
        dtype = np.float32 if b.get("data_type") == "TYPE_FP32" else np.int32
        for t in b.get("target_name", []):
            batch[t] = (b.get("kind", "BATCH_ELEMENT_COUNT"), b["source_input"][0], dtype)
    return [("batch", batch[n]) if n in batch else ("strings" if n in strings else "ragged" if n in ragged else "input", n)
            for n in order]


def _check_string_dims(config, model_name):
    """Triton's backend takes strings as a flat List[str]: a TYPE_STRING input or output has one dimension in all,
    the batch dimension included."""
    batching = 1 if config.get("max_batch_size", 0) > 0 else 0
    for kind in ("input", "output"):
        for io in config.get(kind, []):
            dims = io["reshape"].get("shape", []) if "reshape" in io else io.get("dims", [])
            if io.get("data_type") == "TYPE_STRING" and len(dims) + batching > 1:
                raise pb_utils.TritonModelException(
                    f"Triton only supports 1 dimensional List of String as {kind} for '{io['name']}' "
                    f"for model '{model_name}'")


def _numpy(value, dtype):
    """A forward result as numpy: a tensor's values, or a List[str]'s strings as UTF-8 bytes."""
    if isinstance(value, list):
        return np.array([v.encode("utf-8") for v in value], dtype=np.object_)
    return value.detach().numpy().astype(dtype, copy=False)


def _scatter(config):
    """batch_output (BATCH_SCATTER_WITH_INPUT_SHAPE): output name -> (source input, its full shape with -1 where
    the source's dim goes); such an output is split by the shapes of its source, not by rows."""
    dims = {o["name"]: [int(d) for d in o.get("dims", [])] for o in config.get("output", [])}
    lead = [-1] if config.get("max_batch_size", 0) > 0 else []
    return {t: (b["source_input"][0], lead + dims.get(t, [])) for b in config.get("batch_output", [])
            for t in b.get("target_name", [])}


def _array(request, name):
    t = pb_utils.get_input_tensor_by_name(request, name)
    if t is None:
        raise pb_utils.TritonModelException(f"input '{name}' is missing from the request")
    return t.as_numpy()


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

        model_name = args.get("model_name", "")
        self.input_order, self.dict_input = _input_order(config, self.module, model_name)
        _check_string_dims(config, model_name)
        self.feeds = _feeds(config, self.input_order)
        self.scatter = _scatter(config)
        outputs = config.get("output", [])
        if not outputs:
            raise pb_utils.TritonModelException(
                "model configuration must contain at least one output, none were specified.")
        named = _named_index([o["name"] for o in outputs])
        _check_state_names(config.get("sequence_batching", {}), named, model_name)
        self.outputs = []
        for position, o in enumerate(outputs):
            dtype = pb_utils.triton_string_to_numpy(o["data_type"])
            self.outputs.append((o["name"], _index(o["name"]) if named else position, dtype))
        for st in config.get("sequence_batching", {}).get("state", []):
            self.outputs.append((st["output_name"], _index(st["output_name"]),
                                 pb_utils.triton_string_to_numpy(st["data_type"])))

    def execute(self, requests):
        # A batching model runs the execution's requests as one batch; a model without batching runs each alone.
        groups = [requests] if self.batching else [[r] for r in requests]
        responses = []
        with torch.inference_mode():
            for group in groups:
                for request, outputs in zip(group, self.run_group(group)):
                    wanted = set(request.requested_output_names())
                    tensors = [pb_utils.Tensor(name, outputs[k])
                               for k, (name, _, _) in enumerate(self.outputs) if name in wanted]
                    responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses

    def run_group(self, group):
        """Runs the requests as one forward call; returns each request's outputs, in self.outputs' order."""
        arrays = []
        for kind, what in self.feeds:
            if kind == "batch":
                source_kind, source, dtype = what
                arrays.append(_batch_input(source_kind, dtype, [_array(r, source).shape for r in group]))
                continue
            parts = [_array(r, what) for r in group]
            if kind == "strings":
                arrays.append([v.decode("utf-8") if isinstance(v, bytes) else str(v) for p in parts for v in p.reshape(-1)])
            elif kind == "ragged":
                arrays.append(np.concatenate([p.reshape(-1) for p in parts]))
            else:
                arrays.append(parts[0] if len(parts) == 1 else np.concatenate(parts))
        outputs = self.run(arrays)
        if len(group) == 1 and not self.scatter:
            return [outputs]
        results = [[] for _ in group]
        for (name, _, _), whole in zip(self.outputs, outputs):
            for i, piece in enumerate(self.split(name, whole, group)):
                results[i].append(piece)
        return results

    def split(self, name, whole, group):
        """An output cut into the requests' parts: by rows, or a batch output by its source's shapes."""
        start = 0
        if name not in self.scatter and len(group) == 1:
            yield whole
            return
        if name in self.scatter:
            source, shape = self.scatter[name]
            flat = whole.reshape(-1)
            for r in group:
                source_shape = _array(r, source).shape
                own = [source_shape[i] if d == -1 else d for i, d in enumerate(shape)]
                n = int(np.prod(own))
                yield flat[start:start + n].reshape(own)
                start += n
            return
        for r in group:
            # A request's batch size is the first dimension of its first input, as in Triton's backend.
            rows = r.inputs()[0].shape()[0]
            yield whole[start:start + rows]
            start += rows

    def run(self, arrays):
        tensors = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in arrays]
        if self.dict_input:
            result = self.module(dict(zip(self.input_order, tensors)))
        else:
            result = self.module(*tensors)
        if isinstance(result, torch.Tensor):
            result = (result,)
        out = []
        for name, index, dtype in self.outputs:
            if index >= len(result):
                raise pb_utils.TritonModelException(f"output {name} asks for result {index} of a forward returning {len(result)}")
            out.append(_numpy(result[index], dtype))
        return out
