"""Nereid's own ``triton_python_backend_utils``: the module a Triton ``model.py`` imports as ``pb_utils``.

Pure Python and numpy. The names, signatures and behaviour follow Triton's Python backend so that a model
folder copied from a Triton repository runs unchanged. Where Triton talks to its server through C++ bindings,
this module talks to Nereid through the stub (``nereid_stub.py``), which installs itself with ``_install``.
"""

import asyncio
import json
import struct

import numpy as np

# ---- constants -------------------------------------------------------------------------------------------

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

TRITONSERVER_MEMORY_GPU = 0
TRITONSERVER_MEMORY_CPU = 1
TRITONSERVER_MEMORY_DEFAULT = 2

TRITON_STRING_TO_NUMPY = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# model_config.proto's DataType numbering, and the wire names Nereid uses for the same types.
_TRITON_TO_NUMPY = {
    1: np.bool_, 2: np.uint8, 3: np.uint16, 4: np.uint32, 5: np.uint64, 6: np.int8, 7: np.int16, 8: np.int32,
    9: np.int64, 10: np.float16, 11: np.float32, 12: np.float64, 13: np.object_,
}
_WIRE_NAMES = {
    1: "BOOL", 2: "UINT8", 3: "UINT16", 4: "UINT32", 5: "UINT64", 6: "INT8", 7: "INT16", 8: "INT32", 9: "INT64",
    10: "FP16", 11: "FP32", 12: "FP64", 13: "BYTES", 14: "BF16",
}
_WIRE_NUMBERS = {v: k for k, v in _WIRE_NAMES.items()}
_WIRE_DTYPES = {name: np.dtype(_TRITON_TO_NUMPY[n]) for n, name in _WIRE_NAMES.items() if n in _TRITON_TO_NUMPY}
_WIRE_DTYPES["BF16"] = np.dtype(np.uint16)  # raw 16-bit patterns: numpy has no bfloat16


def triton_string_to_numpy(triton_type_string):
    return TRITON_STRING_TO_NUMPY[triton_type_string]


def triton_to_numpy_type(data_type):
    return _TRITON_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type):
    try:
        t = np.dtype(data_type)
    except TypeError:
        return None
    if t == np.object_ or t.type == np.bytes_:
        return 13
    for number, np_type in _TRITON_TO_NUMPY.items():
        if number != 13 and t == np.dtype(np_type):
            return number
    return None


def serialize_byte_tensor(input_tensor):
    """Object or bytes array -> bytes of (uint32 LE length, bytes) per element in C order."""
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype == np.object_ or input_tensor.dtype.type == np.bytes_:
        parts = []
        for obj in np.nditer(input_tensor, flags=["refs_ok"], order="C"):
            item = obj.item()
            if input_tensor.dtype == np.object_:
                s = item if isinstance(item, bytes) else str(item).encode("utf-8")
            else:
                s = item
            parts.append(struct.pack("<I", len(s)))
            parts.append(s)
        return b"".join(parts)
    return None


def deserialize_bytes_tensor(encoded_tensor):
    """bytes of (uint32 LE length, bytes)* -> 1-D object array of bytes."""
    out = []
    view = memoryview(encoded_tensor)
    offset = 0
    while offset < len(view):
        (length,) = struct.unpack_from("<I", view, offset)
        offset += 4
        out.append(bytes(view[offset:offset + length]))
        offset += length
    return np.array(out, dtype=np.object_)


def get_input_tensor_by_name(inference_request, name):
    for t in inference_request.inputs():
        if t.name() == name:
            return t
    return None


def get_output_tensor_by_name(inference_response, name):
    for t in inference_response.output_tensors():
        if t.name() == name:
            return t
    return None


def get_input_config_by_name(model_config, name):
    for c in model_config.get("input", []):
        if c["name"] == name:
            return c
    return None


def get_output_config_by_name(model_config, name):
    for c in model_config.get("output", []):
        if c["name"] == name:
            return c
    return None


def using_decoupled_model_transaction_policy(model_config):
    policy = model_config.get("model_transaction_policy")
    if policy is not None and "decoupled" in policy:
        return policy["decoupled"]
    return False


# ---- errors ----------------------------------------------------------------------------------------------


class TritonModelException(Exception):
    """Raised by a model (or by this module) to fail initialize, execute or finalize."""


class TritonError:
    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        self._message = str(message)
        self._code = code

    def code(self):
        return self._code

    def message(self):
        return self._message

    def __repr__(self):
        return f"TritonError({self._message!r}, {self._code})"


# ---- tensors ---------------------------------------------------------------------------------------------


class Tensor:
    """A named tensor. Inputs handed to execute() view the request's bytes in shared memory; no copy."""

    def __init__(self, name, array, _datatype=None):
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if not isinstance(array, np.ndarray):
            array = np.asarray(array)
        self._name = name
        self._array = array
        self._datatype = _datatype or _datatype_of(array)

    def name(self):
        return self._name

    def as_numpy(self):
        if self._datatype == "BF16":
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and from_dlpack() instead.")
        return self._array

    def shape(self):
        return list(self._array.shape)

    def triton_dtype(self):
        return _WIRE_NUMBERS[self._datatype]

    def is_cpu(self):
        return True

    def to_dlpack(self):
        if self._array.dtype == np.object_:
            raise TritonModelException("DLPack does not have support for string tensors.")
        return self._array.__dlpack__()

    def __dlpack__(self, stream=None):
        return self.to_dlpack()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    @staticmethod
    def from_dlpack(name, dlpack_tensor):
        if name == "":
            raise TritonModelException("Tensor name cannot be an empty string.")
        if hasattr(dlpack_tensor, "__dlpack__"):
            if not hasattr(dlpack_tensor, "__dlpack_device__"):
                raise TritonModelException(_NOT_DLPACK)
            array = np.from_dlpack(dlpack_tensor)
        elif type(dlpack_tensor).__name__ != "PyCapsule":
            raise TritonModelException(_NOT_DLPACK)
        else:
            # A bare PyCapsule: numpy reads capsules only through an object that returns it from __dlpack__.
            array = np.from_dlpack(_Capsule(dlpack_tensor))
        if not array.flags.c_contiguous:
            raise TritonModelException("DLPack tensor is not contiguous. Only contiguous DLPack tensors that are "
                                       "stored in C-Order are supported.")
        return Tensor(name, array)

    def __repr__(self):
        return f"Tensor({self._name!r}, {self._datatype}, {self.shape()})"


_NOT_DLPACK = ("Provided tensor is not supported. Tensor must be a DLPack capsule or have `__dlpack__` and "
               "`__dlpack_device__` attributes")


class _Capsule:
    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, stream=None):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


_DTYPE_WIRE = {np.dtype(t): _WIRE_NAMES[n] for n, t in _TRITON_TO_NUMPY.items() if n != 13}


def _datatype_of(array):
    name = _DTYPE_WIRE.get(array.dtype)
    if name is not None:
        return name
    kind = array.dtype
    if kind == np.object_ or kind.type == np.bytes_ or kind.type == np.str_:
        return "BYTES"
    number = numpy_to_triton_type(kind)
    if number is None:
        raise TritonModelException(f"unsupported numpy dtype {kind} for a tensor")
    return _WIRE_NAMES[number]


# ---- requests and responses ------------------------------------------------------------------------------


class PreferredMemory:
    def __init__(self, preferred_memory_type=TRITONSERVER_MEMORY_DEFAULT, preferred_device_id=0):
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    # _request: the server's handle of the traced request this trace belongs to; a BLS request given this
    # trace is traced as that request's child.
    def __init__(self, context=None, _request=None):
        self._context = context
        self._request = _request

    def get_context(self):
        return self._context


class InferenceResponse:
    def __init__(self, output_tensors=None, error=None, parameters=None):
        self._outputs = list(output_tensors) if output_tensors is not None else []
        self._error = error
        if parameters is None:
            self._parameters = "{}"
        elif isinstance(parameters, str):
            self._parameters = parameters
        else:
            self._parameters = json.dumps(_check_parameters(parameters))

    def output_tensors(self):
        return self._outputs

    def has_error(self):
        return self._error is not None

    def error(self):
        return self._error

    def parameters(self):
        return self._parameters


def _check_parameters(parameters):
    """Refuses parameters Triton's stub refuses, with its words: a dict of str keys and bool, int or str values."""
    if not isinstance(parameters, dict):
        raise TritonModelException(f"Expect dict, got {type(parameters)}")
    for k, v in parameters.items():
        if not isinstance(k, str):
            raise TritonModelException(f"Expect parameters keys to have type str, found type {type(k)}")
        if not isinstance(v, (bool, int, str)):
            raise TritonModelException(f"Expect parameters values to have type bool/int/str, found type {type(v)}")
    return parameters


class InferenceResponseSender:
    """How a request's responses leave: any number of send() calls, the last with the FINAL flag."""

    def __init__(self, channel):
        self._channel = channel

    def send(self, response=None, flags=0):
        self._channel.send(response, flags)

    def is_cancelled(self):
        return self._channel.is_cancelled()


class InferenceRequest:
    """A request handed to execute(), or one a model builds to call another model (BLS)."""

    def __init__(self, request_id="", correlation_id=0, inputs=None, requested_output_names=None, model_name=None,
                 model_version=-1, flags=0, timeout=0, preferred_memory=None, trace=None, parameters=None):
        if model_name is None or inputs is None or requested_output_names is None:
            raise TritonModelException("InferenceRequest needs model_name, inputs and requested_output_names")
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = list(inputs)
        self._requested_output_names = list(requested_output_names)
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._preferred_memory = preferred_memory or PreferredMemory()
        self._trace = trace or InferenceTrace()
        if parameters is None:
            self._parameters = "{}"
        elif isinstance(parameters, str):
            self._parameters = parameters
        else:
            self._parameters = json.dumps(_check_parameters(parameters))
        self._channel = None  # set by the stub on requests it hands to execute()
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL

    def inputs(self):
        return self._inputs

    def request_id(self):
        return self._request_id

    def correlation_id(self):
        return self._correlation_id

    def flags(self):
        return self._flags

    def set_flags(self, flags):
        self._flags = flags

    def timeout(self):
        return self._timeout

    def parameters(self):
        return self._parameters

    def trace(self):
        return self._trace

    def requested_output_names(self):
        return self._requested_output_names

    def model_name(self):
        return self._model_name

    def get_response_sender(self):
        if self._channel is None:
            raise TritonModelException("only requests given to execute() have a response sender")
        self._channel.obtained = True
        return InferenceResponseSender(self._channel)

    def is_cancelled(self):
        return self._channel is not None and self._channel.is_cancelled()

    def set_release_flags(self, flags):
        if flags & TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
            raise TritonModelException("Nereid does not reschedule requests (TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)")
        self._release_flags = flags

    def exec(self, decoupled=False):
        """BLS: runs this request on another model and blocks; a ResponseIterator when decoupled=True."""
        return _runtime().bls(self, decoupled)

    async def async_exec(self, decoupled=False):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.exec, decoupled)


class ResponseIterator:
    """The responses of a BLS call to a decoupled model, as they come."""

    def __init__(self, call):
        self._call = call

    def __iter__(self):
        return self

    def __next__(self):
        response = self._call.next()
        if response is None:
            raise StopIteration
        return response

    def cancel(self):
        self._call.cancel()


# ---- logging ---------------------------------------------------------------------------------------------


class Logger:
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3

    @staticmethod
    def log(message, level=0):
        _runtime().log(level, str(message))

    @staticmethod
    def log_info(message):
        Logger.log(message, Logger.INFO)

    @staticmethod
    def log_warn(message):
        Logger.log(message, Logger.WARNING)

    @staticmethod
    def log_error(message):
        Logger.log(message, Logger.ERROR)

    @staticmethod
    def log_verbose(message):
        Logger.log(message, Logger.VERBOSE)


# ---- custom metrics --------------------------------------------------------------------------------------


class MetricFamily:
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2

    def __init__(self, name, description, kind):
        if kind not in (MetricFamily.COUNTER, MetricFamily.GAUGE, MetricFamily.HISTOGRAM):
            raise TritonModelException("MetricFamily kind must be COUNTER, GAUGE or HISTOGRAM")
        self._name = name
        self._kind = kind
        self._id = _runtime().request("metric", {"op": "family", "name": name, "description": description, "kind": kind})

    def Metric(self, labels=None, buckets=None):
        return Metric(self, labels, buckets)


class Metric:
    def __init__(self, family, labels=None, buckets=None):
        if family._kind == MetricFamily.HISTOGRAM and buckets is None:
            raise TritonModelException("a HISTOGRAM metric needs buckets")
        if labels is not None and not isinstance(labels, dict):
            raise TritonModelException("Failed to create metric. Labels must be a dictionary.")
        labels = dict(labels or {})
        for k, v in labels.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TritonModelException("metric labels must be a dictionary of str -> str")
        self._family = family
        self._id = _runtime().request("metric", {
            "op": "metric", "family": family._id, "labels": labels,
            "buckets": [float(b) for b in buckets] if buckets is not None else None,
        })

    # Refusals start as Triton's Metric methods start theirs; the reasons that follow are the server core's words
    # where Triton's core has them.
    def increment(self, value):
        if self._family._kind == MetricFamily.HISTOGRAM:
            raise TritonModelException(
                "Failed to increment metric value: increment() is not available on a HISTOGRAM metric")
        if self._family._kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("Failed to increment metric value: TRITONSERVER_METRIC_KIND_COUNTER can only be "
                                       "incremented monotonically by non-negative values.")
        _runtime().notify("metric", {"op": "increment", "metric": self._id, "value": float(value)})

    def set(self, value):
        if self._family._kind == MetricFamily.COUNTER:
            raise TritonModelException(
                "Failed to set metric value: TRITONSERVER_METRIC_KIND_COUNTER does not support Set")
        if self._family._kind != MetricFamily.GAUGE:
            raise TritonModelException("Failed to set metric value: set() is only available on a GAUGE metric")
        _runtime().notify("metric", {"op": "set", "metric": self._id, "value": float(value)})

    def observe(self, value):
        if self._family._kind != MetricFamily.HISTOGRAM:
            raise TritonModelException(
                "Failed to observe metric value: observe() is only available on a HISTOGRAM metric")
        _runtime().notify("metric", {"op": "observe", "metric": self._id, "value": float(value)})

    def value(self):
        return _runtime().request("metric", {"op": "value", "metric": self._id})


# ---- model management (BLS) ------------------------------------------------------------------------------


def load_model(model_name, config="", files=None):
    payload = {"op": "load", "name": model_name, "config": config or ""}
    blobs = []
    if files:
        payload["files"] = []
        for path, content in files.items():
            payload["files"].append(path)
            blobs.append(bytes(content))
    _runtime().request("model", payload, blobs)


def unload_model(model_name, unload_dependents=False):
    _runtime().request("model", {"op": "unload", "name": model_name, "unload_dependents": bool(unload_dependents)})


def is_model_ready(model_name, model_version=""):
    return bool(_runtime().request("model", {"op": "ready", "name": model_name, "version": str(model_version)}))


def get_model_dir():
    return _runtime().model_dir


# ---- auto-complete -------------------------------------------------------------------------------------


class ModelConfig:
    """The model's config during auto_complete_config, as Triton's JSON form, with helpers that only add."""

    def __init__(self, model_config):
        self._model_config = json.loads(model_config) if isinstance(model_config, str) else model_config
        for key, default in (("input", []), ("output", []), ("max_batch_size", 0)):
            self._model_config.setdefault(key, default)

    def as_dict(self):
        return self._model_config

    def set_max_batch_size(self, max_batch_size):
        current = self._model_config.get("max_batch_size", 0)
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config function for "
                f"model '{self._model_config.get('name', '')}' specified max_batch_size {max_batch_size}")
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self):
        for other in ("sequence_batching", "ensemble_scheduling"):
            if other in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{other}', but auto-complete-config function "
                    f"for model '{self._model_config.get('name', '')}' tries to set scheduling_choice as "
                    "'dynamic_batching'")
        self._model_config.setdefault("dynamic_batching", {})

    def add_input(self, input):
        self._add_tensor("input", input, ("name", "data_type", "dims", "optional"),
                         "'name', 'data_type', 'dims' and 'optional'")

    def add_output(self, output):
        self._add_tensor("output", output, ("name", "data_type", "dims"), "'name', 'data_type' and 'dims'")

    def _add_tensor(self, which, tensor, allowed, allowed_words):
        """Adds or completes one tensor of the config, refusing as Triton's ModelConfig does, in its words."""
        if not isinstance(tensor, dict):
            raise ValueError(f"model {which} must be a dictionary")
        model = self._model_config.get("name", "")
        for key in tensor:
            if key not in allowed:
                raise ValueError(f"{which} '{tensor.get('name', '')}' in auto-complete-config function for model "
                                 f"'{model}' contains property other than {allowed_words}.")
        if "name" not in tensor:
            raise ValueError(
                f"{which} in auto-complete-config function for model '{model}' is missing 'name' property.")
        for key in ("data_type", "dims"):
            if key not in tensor:
                raise ValueError(f"{which} '{tensor['name']}' in auto-complete-config function for model '{model}' "
                                 f"is missing '{key}' property.")
        for existing in self._model_config[which]:
            if existing["name"] != tensor["name"]:
                continue
            have = existing.get("data_type", "TYPE_INVALID")
            if have not in ("", "TYPE_INVALID") and have != tensor["data_type"]:
                raise ValueError(f"unable to load model '{model}', configuration expects datatype {have} for {which} "
                                 f"'{tensor['name']}', model provides {tensor['data_type']}")
            dims = existing.get("dims", [])
            if len(dims) > 0 and list(dims) != list(tensor["dims"]):
                raise ValueError(f"model '{model}', tensor '{tensor['name']}': the model expects dims "
                                 f"{list(tensor['dims'])} but the model configuration specifies dims {list(dims)}")
            if "optional" in tensor and "optional" in existing and existing["optional"] != tensor["optional"]:
                raise ValueError(f"model '{model}', tensor '{tensor['name']}': the model expects optional "
                                 f"{tensor['optional']} but the model configuration specifies optional "
                                 f"{existing['optional']}")
            existing["data_type"] = tensor["data_type"]
            existing["dims"] = list(tensor["dims"])
            if "optional" in tensor:
                existing["optional"] = tensor["optional"]
            return
        self._model_config[which].append(dict(tensor))

    def set_model_transaction_policy(self, transaction_policy_dict):
        model = self._model_config.get("name", "")
        for key in transaction_policy_dict:
            if key != "decoupled":
                raise ValueError(f"model transaction property in auto-complete-config function for model '{model}' "
                                 "contains property other than 'decoupled'.")
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            wanted = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != wanted:
                raise ValueError(f"trying to change decoupled property in auto-complete-config for model '{model}', "
                                 f"which is already set to '{policy['decoupled']}'.")
            policy["decoupled"] = wanted


# ---- the stub's side -------------------------------------------------------------------------------------

_RUNTIME = None


def _install(runtime):
    """Called once by the stub: how this module reaches the server."""
    global _RUNTIME
    _RUNTIME = runtime


def _runtime():
    if _RUNTIME is None:
        raise TritonModelException("triton_python_backend_utils is only usable inside a model run by the server")
    return _RUNTIME
