#!/usr/bin/python3
"""Generate the benchmark models into a folder (not committed: ~1.7 MB of weights).

Run:  /usr/bin/python3 scripts/models/make_bench_models.py --out DIR

Writes DIR/mlp.onnx: an MLP 784 -> 512 -> 512 -> 10 (ReLU, softmax) with
seeded random FP32 weights, input INPUT [batch, 784], output PROBABILITIES
[batch, 10]. Compute-bound enough that batching pays, as in Triton's
dynamic-batching examples. Needs Debian's python3-numpy and python3-onnx.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from onnx import helper  # noqa: E402

from onnxgen import const, make_model, vi  # noqa: E402


def mlp(sizes, seed=0):
    rng = np.random.default_rng(seed)
    nodes, inits, cur = [], [], "INPUT"
    for i in range(len(sizes) - 1):
        w = (rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])).astype(np.float32)
        b = np.zeros(sizes[i + 1], dtype=np.float32)
        inits += [const("W%d" % i, w), const("B%d" % i, b)]
        nodes.append(helper.make_node("MatMul", [cur, "W%d" % i], ["mm%d" % i]))
        nodes.append(helper.make_node("Add", ["mm%d" % i, "B%d" % i], ["z%d" % i]))
        cur = "z%d" % i
        if i < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [cur], ["h%d" % i]))
            cur = "h%d" % i
    nodes.append(helper.make_node("Softmax", [cur], ["PROBABILITIES"], axis=-1))
    return make_model("mlp", nodes, [vi("INPUT", "TYPE_FP32", ["batch_size", sizes[0]])],
                      [vi("PROBABILITIES", "TYPE_FP32", ["batch_size", sizes[-1]])], inits,
                      doc="MLP %s for the batching benchmark" % "-".join(map(str, sizes)))


def main():
    out = sys.argv[sys.argv.index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "mlp.onnx"), "wb") as f:
        f.write(mlp([784, 512, 512, 10]).SerializeToString())
    print("wrote", os.path.join(out, "mlp.onnx"))


if __name__ == "__main__":
    main()
