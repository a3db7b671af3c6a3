#!/usr/bin/python3
"""Builds a small CNN whose nodes differ in cost by orders of magnitude, for
the fidelity test (runs in well under a second in ONNX Runtime).

    /usr/bin/python3 tools/fidelity/test/make_model.py OUT.onnx

x:float[1,3,64,64] -> Conv 3->16 3x3 -> Relu -> MaxPool 2 -> Conv 16->32 3x3
-> Relu -> GlobalAveragePool -> Flatten -> Gemm 32->10 -> Softmax (opset 13,
every node named).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(3)
W = {
    "w1": rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.2,
    "b1": np.zeros(16, np.float32),
    "w2": rng.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.1,
    "b2": np.zeros(32, np.float32),
    "wf": rng.standard_normal((10, 32)).astype(np.float32) * 0.1,
    "bf": np.zeros(10, np.float32),
}
nodes = [
    helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
    helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
    helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
    helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
    helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
    helper.make_node("Gemm", ["f", "wf", "bf"], ["l"], name="fc", transB=1),
    helper.make_node("Softmax", ["l"], ["y"], name="softmax", axis=1),
]
graph = helper.make_graph(
    nodes, "fidelity_cnn",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 64, 64])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
    [numpy_helper.from_array(v, k) for k, v in W.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
