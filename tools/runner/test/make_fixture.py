#!/usr/bin/python3
"""Builds a tiny model and a hand-made 2-device staged deployment of it, so the
runner can be tested without the C++ rewriter.

    /usr/bin/python3 tools/runner/test/make_fixture.py DIR [--corrupt]

writes DIR/model.onnx (the unsplit model), DIR/deploy/ (plan.json,
stages/s0..s3.onnx) and DIR/pipeline/ (a 3-stage split of the same model for
pipelined runs). With --corrupt, weight W2 is perturbed in the stage that
holds it, so the deployments no longer match the model.

Model (opset 13): ids:int64[2,3], x:float[2,8] ->
    x2  = x + ReduceMean(Gather(E, ids), axis 1)
    r   = Relu(x2 @ W1)             y   = r @ W2            (output)
    t   = Tanh(x2 * c)              s   = t @ W3
    z   = y + s                     (output)
    idx = ArgMax(z, axis 1)         (output, int64)
deploy/ stages:   s0 dev0: ids, x -> r, t     s1 dev1: r -> y
                  s2 dev0: t -> s (can run while s1 runs)
                  s3 dev0: y, s -> z, idx     (consumes y from device 1)
pipeline/ stages: s0 dev0: ids, x -> r, t     s1 dev1: r, t -> y, s
                  s2 dev0: y, s -> z, idx
  (y is a graph output of device 1 and also read by device 0)
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 13)]
rng = np.random.default_rng(7)
W = {
    "E": rng.standard_normal((10, 8)).astype(np.float32),
    "W1": rng.standard_normal((8, 16)).astype(np.float32) * 0.5,
    "W2": rng.standard_normal((16, 4)).astype(np.float32) * 0.5,
    "W3": rng.standard_normal((8, 4)).astype(np.float32) * 0.5,
    "c": np.array([1.5], dtype=np.float32),
}
NODES = {
    "gather": helper.make_node("Gather", ["E", "ids"], ["g"], name="gather"),
    "mean": helper.make_node("ReduceMean", ["g"], ["gm"], name="mean", axes=[1], keepdims=0),
    "add_in": helper.make_node("Add", ["x", "gm"], ["x2"], name="add_in"),
    "mm1": helper.make_node("MatMul", ["x2", "W1"], ["h"], name="mm1"),
    "relu": helper.make_node("Relu", ["h"], ["r"], name="relu"),
    "mm2": helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"),
    "scale": helper.make_node("Mul", ["x2", "c"], ["xc"], name="scale"),
    "tanh": helper.make_node("Tanh", ["xc"], ["t"], name="tanh"),
    "mm3": helper.make_node("MatMul", ["t", "W3"], ["s"], name="mm3"),
    "add_out": helper.make_node("Add", ["y", "s"], ["z"], name="add_out"),
    "argmax": helper.make_node("ArgMax", ["z"], ["idx"], name="argmax", axis=1, keepdims=0),
}
F, I64 = TensorProto.FLOAT, TensorProto.INT64
TYPES = {"ids": (I64, [2, 3]), "x": (F, [2, 8]), "r": (F, [2, 16]), "t": (F, [2, 8]),
         "y": (F, [2, 4]), "s": (F, [2, 4]), "z": (F, [2, 4]), "idx": (I64, [2])}


def make_model(name, nodes, inputs, outputs, weights):
    vi = lambda n: helper.make_tensor_value_info(n, *TYPES[n])
    used = {i for n in nodes for i in NODES[n].input}
    inits = [numpy_helper.from_array(weights[k], k) for k in sorted(weights) if k in used]
    graph = helper.make_graph([NODES[n] for n in nodes], name, [vi(i) for i in inputs],
                              [vi(o) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=OPSET, producer_name="make_fixture")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


HEAD = ["gather", "mean", "add_in", "mm1", "relu", "scale", "tanh"]
STAGES = [  # id, device, nodes, inputs, outputs, after
    (0, 0, HEAD, ["ids", "x"], ["r", "t"], []),
    (1, 1, ["mm2"], ["r"], ["y"], [0]),
    (2, 0, ["mm3"], ["t"], ["s"], [0]),
    (3, 0, ["add_out", "argmax"], ["y", "s"], ["z", "idx"], [1, 2]),
]
PIPELINE_STAGES = [
    (0, 0, HEAD, ["ids", "x"], ["r", "t"], []),
    (1, 1, ["mm2", "mm3"], ["r", "t"], ["y", "s"], [0]),
    (2, 0, ["add_out", "argmax"], ["y", "s"], ["z", "idx"], [1]),
]


def write_deployment(out, stages, corrupt):
    os.makedirs(os.path.join(out, "stages"), exist_ok=True)
    for sid, dev, nodes, ins, outs, _ in stages:
        weights = dict(W)
        if corrupt and "mm2" in nodes:
            weights["W2"] = W["W2"] + np.float32(0.01)
        model = make_model(f"s{sid}", nodes, ins, outs, weights)
        onnx.save(model, os.path.join(out, "stages", f"s{sid}.onnx"))
    nbytes = lambda n: 4 * int(np.prod(TYPES[n][1]))
    device_of = {o: dev for _, dev, _, _, outs, _ in stages for o in outs}
    transfers = sorted({(t, device_of[t], dev) for _, dev, _, ins, _, _ in stages for t in ins
                        if t in device_of and device_of[t] != dev})
    plan = {
        "format": "onnx-autopar-plan", "version": 1,
        "source": {"path": "../model.onnx", "nodes": len(NODES)},
        "algorithm": "hand-made", "seed": 0,
        "devices": [{"id": 0, "model": "device_0.onnx"}, {"id": 1, "model": "device_1.onnx"}],
        "inputs": [{"name": "ids", "devices": [0]}, {"name": "x", "devices": [0]}],
        "outputs": [{"name": o, "device": device_of[o]} for o in ["y", "z", "idx"]],
        "transfers": [{"tag": k, "tensor": t, "src": src, "dst": dst, "bytes": nbytes(t),
                       "dtype": "float32", "shape": TYPES[t][1]}
                      for k, (t, src, dst) in enumerate(transfers)],
        "stages": [{"id": sid, "device": dev, "model": f"stages/s{sid}.onnx", "inputs": ins,
                    "outputs": outs, "after": after} for sid, dev, _, ins, outs, after in stages],
        "node_to_device": {n: dev for _, dev, nodes, *_ in stages for n in nodes},
    }
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def main():
    out = sys.argv[1]
    corrupt = "--corrupt" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    onnx.save(make_model("fixture", list(NODES), ["ids", "x"], ["y", "z", "idx"], W),
              os.path.join(out, "model.onnx"))
    write_deployment(os.path.join(out, "deploy"), STAGES, corrupt)
    write_deployment(os.path.join(out, "pipeline"), PIPELINE_STAGES, corrupt)


if __name__ == "__main__":
    main()
