"""Checks of Nereid's triton_python_backend_utils that need no server: the helpers a model.py calls on its own.
Run by utils.test.ts with /usr/bin/python3; prints "ok" at the end, raises on the first failure."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "python"))

import numpy as np  # noqa: E402

import triton_python_backend_utils as pb_utils  # noqa: E402


def raises(fn, kind=ValueError):
    try:
        fn()
    except kind:
        return
    raise AssertionError(f"{fn} did not raise {kind.__name__}")


# Types.
assert pb_utils.triton_string_to_numpy("TYPE_FP32") == np.float32
assert pb_utils.triton_string_to_numpy("TYPE_STRING") == np.object_
assert pb_utils.triton_to_numpy_type(8) == np.int32
assert pb_utils.triton_to_numpy_type(13) == np.object_
assert pb_utils.triton_to_numpy_type(99) is None
assert pb_utils.numpy_to_triton_type(np.float16) == 10
assert pb_utils.numpy_to_triton_type(np.object_) == 13
assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
assert pb_utils.numpy_to_triton_type(np.complex64) is None

# BYTES serialization, Triton's layout.
data = np.array([b"ab", "grüße", b""], dtype=np.object_)
blob = pb_utils.serialize_byte_tensor(data)
assert blob == b"\x02\x00\x00\x00ab\x07\x00\x00\x00gr\xc3\xbc\xc3\x9fe\x00\x00\x00\x00", blob
back = pb_utils.deserialize_bytes_tensor(blob)
assert back.dtype == np.object_ and list(back) == [b"ab", "grüße".encode(), b""]
assert pb_utils.serialize_byte_tensor(np.array([], dtype=np.object_)) == ()
assert pb_utils.serialize_byte_tensor(np.array([1, 2], dtype=np.int32)) is None

# Tensors.
t = pb_utils.Tensor("X", np.arange(6, dtype=np.float32).reshape(2, 3))
assert t.name() == "X" and t.shape() == [2, 3] and t.triton_dtype() == 11 and t.is_cpu()
assert pb_utils.Tensor("S", np.array([b"a"], dtype=np.object_)).triton_dtype() == 13
d = pb_utils.Tensor.from_dlpack("Y", t.to_dlpack())
assert d.name() == "Y" and np.array_equal(d.as_numpy(), t.as_numpy())
d2 = pb_utils.Tensor.from_dlpack("Z", t)
assert np.array_equal(d2.as_numpy(), t.as_numpy())

# Requests and responses built by a model.
req = pb_utils.InferenceRequest(model_name="m", inputs=[t], requested_output_names=["O"], parameters={"a": 1, "b": "x"},
                                correlation_id="seq-1", flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START)
assert json.loads(req.parameters()) == {"a": 1, "b": "x"} and req.correlation_id() == "seq-1" and req.flags() == 1
assert pb_utils.get_input_tensor_by_name(req, "X") is t and pb_utils.get_input_tensor_by_name(req, "nope") is None
raises(lambda: pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=[], parameters={"a": 1.5}),
       pb_utils.TritonModelException)
res = pb_utils.InferenceResponse(output_tensors=[t])
assert pb_utils.get_output_tensor_by_name(res, "X") is t and not res.has_error()
err = pb_utils.InferenceResponse(error=pb_utils.TritonError("bad", pb_utils.TritonError.INVALID_ARG))
assert err.has_error() and err.error().message() == "bad" and err.error().code() == 3
assert pb_utils.TritonError("x").code() == pb_utils.TritonError.INTERNAL
assert (pb_utils.TritonError.UNKNOWN, pb_utils.TritonError.CANCELLED) == (0, 7)

# Config helpers.
config = {"input": [{"name": "I", "data_type": "TYPE_FP32"}], "output": [{"name": "O", "data_type": "TYPE_INT32"}],
          "model_transaction_policy": {"decoupled": True}}
assert pb_utils.get_input_config_by_name(config, "I")["data_type"] == "TYPE_FP32"
assert pb_utils.get_output_config_by_name(config, "O")["data_type"] == "TYPE_INT32"
assert pb_utils.get_output_config_by_name(config, "none") is None
assert pb_utils.using_decoupled_model_transaction_policy(config) is True
assert pb_utils.using_decoupled_model_transaction_policy({}) is False

# ModelConfig, as auto_complete_config uses it.
mc = pb_utils.ModelConfig(json.dumps({"name": "m", "max_batch_size": 4, "input": [{"name": "A", "data_type": "TYPE_FP32", "dims": [2]}]}))
raises(lambda: mc.set_max_batch_size(2))
mc.set_max_batch_size(8)
mc.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [2]})
raises(lambda: mc.add_input({"name": "A", "data_type": "TYPE_INT32", "dims": [2]}))
raises(lambda: mc.add_input({"name": "A", "data_type": "TYPE_FP32", "dims": [3]}))
raises(lambda: mc.add_input({"name": "B", "data_type": "TYPE_FP32"}))
raises(lambda: mc.add_input({"name": "B", "data_type": "TYPE_FP32", "dims": [1], "format": "x"}))
raises(lambda: mc.add_output({"name": "O", "data_type": "TYPE_FP32", "dims": [1], "optional": True}))
mc.add_input({"name": "B", "data_type": "TYPE_INT32", "dims": [-1], "optional": True})
mc.add_output({"name": "O", "data_type": "TYPE_FP32", "dims": [1]})
mc.set_dynamic_batching()
mc.set_model_transaction_policy({"decoupled": True})
raises(lambda: mc.set_model_transaction_policy({"decoupled": False}))
raises(lambda: mc.set_model_transaction_policy({"other": 1}))
cfg = mc.as_dict()
assert cfg["max_batch_size"] == 8 and [i["name"] for i in cfg["input"]] == ["A", "B"] and cfg["input"][1]["optional"]
assert cfg["dynamic_batching"] == {} and cfg["model_transaction_policy"] == {"decoupled": True}
seq = pb_utils.ModelConfig({"name": "s", "sequence_batching": {}})
raises(seq.set_dynamic_batching)

# Outside a running model, server calls say so.
raises(lambda: pb_utils.Logger.log_info("x"), pb_utils.TritonModelException)

print("ok")
