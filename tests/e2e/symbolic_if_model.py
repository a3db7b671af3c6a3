#!/usr/bin/python3
"""Writes OUT_DIR/if_on_batch.onnx: y = Tanh(If(x.shape[0] > 1, Relu(h), Neg(h)))
with h = Sigmoid(x) and x [batch, 4]. The condition depends on the symbolic
batch only, so a split planned at --dim batch=2 must keep the If (deciding at
run time) rather than inline the branch batch 2 takes.

Usage: /usr/bin/python3 tests/e2e/symbolic_if_model.py OUT_DIR
"""
import os
import sys

import onnx
from onnx import TensorProto, helper


def main():
    out = sys.argv[1]
    f = TensorProto.FLOAT
    then = helper.make_graph([helper.make_node("Relu", ["h"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", f, ["batch", 4])])
    other = helper.make_graph([helper.make_node("Neg", ["h"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", f, ["batch", 4])])
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["h"], name="sigmoid"),
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Constant", [], ["zero"], name="zero",
                         value=helper.make_tensor("zero_v", TensorProto.INT64, [1], [0])),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="batch_of_x"),
        helper.make_node("Constant", [], ["one"], name="one",
                         value=helper.make_tensor("one_v", TensorProto.INT64, [1], [1])),
        helper.make_node("Greater", ["b", "one"], ["c1"], name="more_than_one"),
        helper.make_node("Squeeze", ["c1"], ["c"], name="condition"),
        helper.make_node("If", ["c"], ["z"], name="by_batch", then_branch=then, else_branch=other),
        helper.make_node("Tanh", ["z"], ["y"], name="tanh"),
    ]
    graph = helper.make_graph(nodes, "if_on_batch",
                              [helper.make_tensor_value_info("x", f, ["batch", 4])],
                              [helper.make_tensor_value_info("y", f, ["batch", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "if_on_batch.onnx"))


if __name__ == "__main__":
    main()
