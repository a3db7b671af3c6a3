#!/usr/bin/python3
"""Builds a deep float16 network for the half-precision --check tests.

    /usr/bin/python3 tools/runner/test/make_fp16_fixture.py OUT.onnx [--layers N] [--cast-out]
    /usr/bin/python3 tools/runner/test/make_fp16_fixture.py --corrupt OUT_DIR [--weight W15]

Model (opset 17): x: float16[4, 32] -> a chain of N blocks (default 30), each
    h = Tanh(MatMul(h, W_k) + b_k)        (W_k float16 [32, 32], scaled so that
                                           activations stay of magnitude ~1)
every third block also adds a residual (h = h + previous h), so rounding
differences travel along several paths. The output y is float16, or float32
with --cast-out (a final Cast, as a float16 network exported with float32
outputs has). All initializers are float16, so the runner's check treats the
model as computing in half precision.

--corrupt rewrites, in the deployment OUT_DIR (what onnx-autopar --stages
writes), the stage model that holds weight W15 (--weight) with that weight
multiplied by 3: a wrong weight, a real error a check must catch.
"""
import argparse
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 32


def build(layers, cast_out):
    rng = np.random.default_rng(11)
    nodes, inits = [], []
    h = "x"
    prev = None
    for k in range(layers):
        w = (rng.standard_normal((D, D)) / np.sqrt(D) * 1.2).astype(np.float16)
        b = (rng.standard_normal(D) * 0.1).astype(np.float16)
        inits += [numpy_helper.from_array(w, f"W{k}"), numpy_helper.from_array(b, f"b{k}")]
        nodes += [
            helper.make_node("MatMul", [h, f"W{k}"], [f"m{k}"], name=f"mm{k}"),
            helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"], name=f"add{k}"),
            helper.make_node("Tanh", [f"a{k}"], [f"t{k}"], name=f"tanh{k}"),
        ]
        out = f"t{k}"
        if k % 3 == 2 and prev is not None:
            nodes.append(helper.make_node("Add", [out, prev], [f"r{k}"], name=f"res{k}"))
            out = f"r{k}"
        prev, h = h, out
    y_type = TensorProto.FLOAT16
    if cast_out:
        nodes.append(helper.make_node("Cast", [h], ["y"], name="cast_out", to=TensorProto.FLOAT))
        y_type = TensorProto.FLOAT
    else:
        nodes.append(helper.make_node("Identity", [h], ["y"], name="out"))
    graph = helper.make_graph(
        nodes, "fp16_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4, D])],
        [helper.make_tensor_value_info("y", y_type, [4, D])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def corrupt(out_dir, weight):
    with open(os.path.join(out_dir, "plan.json")) as f:
        plan = json.load(f)
    for stage in plan["stages"]:
        path = os.path.join(out_dir, stage["model"])
        model = onnx.load(path)
        for t in model.graph.initializer:
            if t.name == weight:
                a = numpy_helper.to_array(t) * np.float16(3)
                t.CopyFrom(numpy_helper.from_array(a.astype(np.float16), t.name))
                onnx.save(model, path)
                print(stage["model"])
                return
    raise SystemExit(f"{out_dir}: no stage holds {weight}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--layers", type=int, default=30)
    p.add_argument("--cast-out", action="store_true")
    p.add_argument("--corrupt", action="store_true")
    p.add_argument("--weight", default="W15")
    a = p.parse_args()
    if a.corrupt:
        corrupt(a.path, a.weight)
    else:
        onnx.save(build(a.layers, a.cast_out), a.path)


if __name__ == "__main__":
    main()
