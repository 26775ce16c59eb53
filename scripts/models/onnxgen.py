"""Shared helpers for make_examples.py and make_fixtures.py.

Builds small ONNX models with onnx.helper and writes Triton-style model
repositories deterministically: the same inputs always give byte-identical
files (no timestamps, fixed producer strings, fixed seeds in the callers).

Needs Debian's python3-onnx (1.12) and python3-numpy; run with /usr/bin/python3.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# ONNX opset 14 (Add/Sub on int8 etc. need >= 14) and IR version 7 are both
# understood by onnx 1.12 and by the ONNX Runtime used in Triton and Nereid.
OPSET = 14
IR_VERSION = 7
PRODUCER = "nereid/scripts/models"

REPO_ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# Triton TYPE_* -> (ONNX elem type, numpy dtype, KServe wire datatype)
DTYPES = {
    "TYPE_BOOL": (TensorProto.BOOL, np.bool_, "BOOL"),
    "TYPE_UINT8": (TensorProto.UINT8, np.uint8, "UINT8"),
    "TYPE_UINT16": (TensorProto.UINT16, np.uint16, "UINT16"),
    "TYPE_UINT32": (TensorProto.UINT32, np.uint32, "UINT32"),
    "TYPE_UINT64": (TensorProto.UINT64, np.uint64, "UINT64"),
    "TYPE_INT8": (TensorProto.INT8, np.int8, "INT8"),
    "TYPE_INT16": (TensorProto.INT16, np.int16, "INT16"),
    "TYPE_INT32": (TensorProto.INT32, np.int32, "INT32"),
    "TYPE_INT64": (TensorProto.INT64, np.int64, "INT64"),
    "TYPE_FP16": (TensorProto.FLOAT16, np.float16, "FP16"),
    "TYPE_FP32": (TensorProto.FLOAT, np.float32, "FP32"),
    "TYPE_FP64": (TensorProto.DOUBLE, np.float64, "FP64"),
    "TYPE_STRING": (TensorProto.STRING, np.object_, "BYTES"),
}


def onnx_type(triton_type):
    return DTYPES[triton_type][0]


def vi(name, triton_type, shape):
    """A graph input/output. shape entries: int (fixed) or str (symbolic dim)."""
    return helper.make_tensor_value_info(name, onnx_type(triton_type), shape)


def const(name, array):
    """An initializer from a numpy array (dtype kept)."""
    return numpy_helper.from_array(np.asarray(array), name=name)


def make_model(name, nodes, inputs, outputs, initializers=(), doc="", opset=OPSET):
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(initializers))
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name=PRODUCER,
        producer_version="1",
        doc_string=doc,
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


class RepoWriter:
    """Writes files below one output folder and remembers them, so that files
    left over from an older run (and not written now) can be removed."""

    def __init__(self, root):
        self.root = root
        self.written = set()

    def path(self, rel):
        return os.path.join(self.root, *rel.split("/"))

    def write_bytes(self, rel, data):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        # Only touch the file when the content changes: keeps mtimes stable
        # for servers polling the repository while the script reruns.
        if os.path.exists(p):
            with open(p, "rb") as f:
                if f.read() == data:
                    self.written.add(os.path.normpath(p))
                    return
        with open(p, "wb") as f:
            f.write(data)
        self.written.add(os.path.normpath(p))

    def write_text(self, rel, text):
        self.write_bytes(rel, text.encode("utf-8"))

    def write_model(self, rel, model):
        self.write_bytes(rel, model.SerializeToString())

    def remove_stale(self, subdirs=None):
        """Delete files this run did not write, then empty dirs: everywhere
        under root, or only under the given subdirectories of root."""
        removed = []
        tops = [self.root] if subdirs is None else [self.path(d) for d in subdirs]
        walk = [x for top in tops for x in os.walk(top, topdown=False)]
        for dirpath, dirnames, filenames in walk:
            for fn in filenames:
                p = os.path.normpath(os.path.join(dirpath, fn))
                if p not in self.written:
                    os.remove(p)
                    removed.append(os.path.relpath(p, self.root))
            if dirpath != self.root and not os.listdir(dirpath):
                os.rmdir(dirpath)
        return removed

    def total_size(self):
        return sum(os.path.getsize(p) for p in self.written)


def _dims(dims):
    return "[ " + ", ".join(str(d) for d in dims) + " ]"


def io_block(kind, tensors):
    """Triton-style `input [ ... ]` / `output [ ... ]` text.

    tensors: list of dicts with name, data_type, dims and optional reshape
    (list), label_filename, optional (bool), allow_ragged_batch (bool)."""
    parts = []
    for t in tensors:
        lines = [
            "  {",
            '    name: "%s"' % t["name"],
            "    data_type: %s" % t["data_type"],
            "    dims: %s" % _dims(t["dims"]),
        ]
        if "reshape" in t:
            lines.append("    reshape: { shape: %s }" % _dims(t["reshape"]))
        if t.get("label_filename"):
            lines.append('    label_filename: "%s"' % t["label_filename"])
        if t.get("optional"):
            lines.append("    optional: true")
        if t.get("allow_ragged_batch"):
            lines.append("    allow_ragged_batch: true")
        lines.append("  }")
        parts.append("\n".join(lines))
    return "%s [\n%s\n]\n" % (kind, ",\n".join(parts))


def config_text(name, inputs, outputs, max_batch_size, platform=None, backend=None,
                header=None, extra_top="", extra_bottom=""):
    """A config.pbtxt in the layout of Triton's docs/examples configs."""
    out = []
    if header:
        out.extend("# " + line if line else "#" for line in header.splitlines())
        out.append("")
    out.append('name: "%s"' % name)
    if platform:
        out.append('platform: "%s"' % platform)
    if backend:
        out.append('backend: "%s"' % backend)
    out.append("max_batch_size: %d" % max_batch_size)
    text = "\n".join(out) + "\n"
    if extra_top:
        text += extra_top if extra_top.endswith("\n") else extra_top + "\n"
    text += io_block("input", inputs)
    text += io_block("output", outputs)
    if extra_bottom:
        text += extra_bottom if extra_bottom.endswith("\n") else extra_bottom + "\n"
    return text
