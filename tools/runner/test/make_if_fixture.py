#!/usr/bin/python3
"""Builds a model whose network sits inside an If on an input value, and the
2-stage deployment onnx-autopar writes for it once the If is inlined for one
value (onnx-autopar --input-value rate=8000), written by hand so that the
runner's --input-value is tested without the C++ rewriter.

    /usr/bin/python3 tools/runner/test/make_if_fixture.py DIR

Model (opset 13): x:float[2,4], rate:int64 scalar, mask:bool[2,4] ->
    y = If(rate > 16000, then: Concat(x, x, axis 1) -> [2,8],
                         else: Where(mask, Relu(x) * 2, x) -> [2,4])
DIR/model.onnx is it; DIR/inlined/ (plan.json, stages/s0..s1.onnx) holds
the else branch only, on 2 devices: s0 dev0: x -> r (Relu(x) * 2),
s1 dev1: mask, r, x -> y (the Where). rate is a graph input no stage reads.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13)]
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
TWO = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")


def relu2_nodes():
    return [helper.make_node("Relu", ["x"], ["h"], name="relu"),
            helper.make_node("Mul", ["h", "two"], ["r"], name="double")]


def where_node():
    return helper.make_node("Where", ["mask", "r", "x"], ["y"], name="pick")


def model():
    then_g = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["y_then"], name="cat", axis=1)], "then", [],
        [helper.make_tensor_value_info("y_then", F, [2, 8])])
    else_g = helper.make_graph(
        relu2_nodes() + [helper.make_node("Where", ["mask", "r", "x"], ["y_else"], name="pick")],
        "else", [], [helper.make_tensor_value_info("y_else", F, [2, 4])])
    nodes = [
        helper.make_node("Greater", ["rate", "limit"], ["high"], name="is_high"),
        helper.make_node("If", ["high"], ["y"], name="by_rate", then_branch=then_g, else_branch=else_g),
    ]
    limit = numpy_helper.from_array(np.array(16000, dtype=np.int64), "limit")
    graph = helper.make_graph(
        nodes, "if_on_rate",
        [helper.make_tensor_value_info("x", F, [2, 4]), helper.make_tensor_value_info("rate", I64, []),
         helper.make_tensor_value_info("mask", B, [2, 4])],
        [helper.make_tensor_value_info("y", F, [2, "width"])], [limit, TWO])
    return helper.make_model(graph, opset_imports=OPSET)


def stage(name, nodes, inputs, outputs, inits):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, *t) for n, t in inputs],
                              [helper.make_tensor_value_info(n, *t) for n, t in outputs], inits)
    return helper.make_model(graph, opset_imports=OPSET)


def main():
    out = sys.argv[1]
    os.makedirs(os.path.join(out, "inlined", "stages"), exist_ok=True)
    m = model()
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "model.onnx"))
    onnx.save(stage("s0", relu2_nodes(), [("x", (F, [2, 4]))], [("r", (F, [2, 4]))], [TWO]),
              os.path.join(out, "inlined", "stages", "s0.onnx"))
    onnx.save(stage("s1", [where_node()], [("mask", (B, [2, 4])), ("r", (F, [2, 4])), ("x", (F, [2, 4]))],
                    [("y", (F, [2, 4]))], []),
              os.path.join(out, "inlined", "stages", "s1.onnx"))
    plan = {
        "format": "onnx-autopar-plan", "version": 1,
        "source": {"path": "../model.onnx", "nodes": 4},
        "algorithm": "hand-made", "seed": 0,
        "devices": [{"id": 0, "model": "device_0.onnx"}, {"id": 1, "model": "device_1.onnx"}],
        "inputs": [{"name": "x", "devices": [0, 1]}, {"name": "rate", "devices": []},
                   {"name": "mask", "devices": [1]}],
        "outputs": [{"name": "y", "device": 1}],
        "transfers": [{"tag": 0, "tensor": "r", "src": 0, "dst": 1, "bytes": 32, "dtype": "float32",
                       "shape": [2, 4]}],
        "stages": [
            {"id": 0, "device": 0, "model": "stages/s0.onnx", "inputs": ["x"], "outputs": ["r"], "after": []},
            {"id": 1, "device": 1, "model": "stages/s1.onnx", "inputs": ["mask", "r", "x"], "outputs": ["y"],
             "after": []},
        ],
        "node_to_device": {"relu": 0, "double": 0, "pick": 1},
    }
    with open(os.path.join(out, "inlined", "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


if __name__ == "__main__":
    main()
