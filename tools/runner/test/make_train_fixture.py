#!/usr/bin/python3
"""Tiny MLPs for train.mjs's tests (train.test.mjs).

    /usr/bin/python3 tools/runner/test/make_train_fixture.py DIR

writes, all with the same weights (opset 13):
  DIR/mlp_b2.onnx     x:float[2,3] -> Gemm(W1, b1) -> Relu -> Gemm(W2, b2) -> logits [2,4]
  DIR/mlp_b4.onnx     the same for a batch of 4
  DIR/external/mlp.onnx  mlp_b2 with a frozen float initializer `scale` (logits
                      are multiplied by it) and an int64 `shape` initializer
                      (a Reshape), the float initializers in external data files
  DIR/data_b2/step_<s>/mb_<m>/{x,labels}.pb   2 steps of 2 micro-batches of 2 rows
  DIR/data_b4/step_<s>/mb_0/{x,labels}.pb      the same rows, each step's two
                      micro-batches concatenated into one batch of 4
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper, numpy_helper

rng = np.random.default_rng(3)
WEIGHTS = {
    "W1": rng.standard_normal((5, 3)).astype(np.float32),
    "b1": rng.standard_normal(5).astype(np.float32) * 0.1,
    "W2": rng.standard_normal((4, 5)).astype(np.float32),
    "b2": rng.standard_normal(4).astype(np.float32) * 0.1,
}


def mlp(batch, extra=False):
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("Gemm", ["r", "W2", "b2"], ["z" if extra else "logits"], name="fc2", transB=1),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in WEIGHTS.items()]
    if extra:
        nodes += [
            helper.make_node("Mul", ["z", "scale"], ["zs"], name="scale_logits"),
            helper.make_node("Reshape", ["zs", "shape"], ["logits"], name="reshape"),
        ]
        inits += [numpy_helper.from_array(np.array([0.5], dtype=np.float32), "scale"),
                  numpy_helper.from_array(np.array([batch, 4], dtype=np.int64), "shape")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 4])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write(path, name, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(value, name).SerializeToString())


def main(out):
    os.makedirs(out, exist_ok=True)
    onnx.save(mlp(2), os.path.join(out, "mlp_b2.onnx"))
    onnx.save(mlp(4), os.path.join(out, "mlp_b4.onnx"))
    os.makedirs(os.path.join(out, "external"), exist_ok=True)
    # Float initializers in external data files (one each); the int64 shape
    # stays inline, as ONNX Runtime reads a Reshape's shape only from there.
    external = mlp(2, extra=True)
    for t in external.graph.initializer:
        if t.data_type == TensorProto.FLOAT:
            external_data_helper.set_external_data(t, f"{t.name}.bin")
    onnx.save(external, os.path.join(out, "external", "mlp.onnx"))
    data = np.random.default_rng(5)
    for s in range(2):
        xs = data.uniform(-1, 1, (4, 3)).astype(np.float32)
        labels = data.integers(0, 4, 4, dtype=np.int64)
        for m in range(2):
            d = os.path.join(out, "data_b2", f"step_{s}", f"mb_{m}")
            write(os.path.join(d, "x.pb"), "x", xs[2 * m:2 * m + 2])
            write(os.path.join(d, "labels.pb"), "labels", labels[2 * m:2 * m + 2])
        d = os.path.join(out, "data_b4", f"step_{s}", "mb_0")
        write(os.path.join(d, "x.pb"), "x", xs)
        write(os.path.join(d, "labels.pb"), "labels", labels)


if __name__ == "__main__":
    main(sys.argv[1])
