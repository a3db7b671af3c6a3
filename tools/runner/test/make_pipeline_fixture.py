#!/usr/bin/python3
"""A split training step written by hand, for train.mjs's pipeline tests
(train_pipeline.test.mjs), so that the runner is tested without the C++ side.

    /usr/bin/python3 tools/runner/test/make_pipeline_fixture.py DIR

The model: x[2,8] -> MatMul W1[8,16] -> Relu -> MatMul W2[16,16] -> Relu
-> MatMul W3[16,4] -> y[2,4]; the loss is MSE against target[2,4]:
loss = mean((y - target)^2). Every gradient node is written by hand.

Writes (opset 13):
  DIR/model.onnx              the source model (x -> y, W1..W3 as initializers)
  DIR/gpipe/, DIR/1f1b/       two output folders, each:
    plan.json                 mode "training"; training.pipeline with M = 4
    step/init.onnx            no inputs; outputs W1.initial, W2.initial, W3.initial
    step/gradient.onnx        x, target, W1..W3 -> loss, W1_grad, W2_grad, W3_grad
    step/update.onnx          every weight (the unsplit step)
    stages/s0.onnx .. s5.onnx the split: 3 forward stages placed A,B,A on
                              devices 0,1,0 and their backward stages
    step/update_d0.onnx       W1 and W3 (device 0)
    step/update_d1.onnx       W2 (device 1)
  gpipe trains with sgd (lr 0.1), 1f1b with adam (lr 0.01, step input
  "optimizer.step"), so both update kinds are covered.

Stages (id kind device: inputs -> outputs):
  0 forward  0: x, W1        -> h1, r1         r1 = relu(x W1)
  1 forward  1: r1, W2       -> h2, r2         r2 = relu(r1 W2)
  2 forward  0: r2, W3, target -> loss, d      d = r2 W3 - target
  3 backward 0: d, r2, W3    -> W3_grad, dr2   dy = d * 2/8
  4 backward 1: dr2, h2, r1, W2 -> W2_grad, dr1
  5 backward 0: dr1, h1, x   -> W1_grad
  6 update   0: step/update_d0.onnx (W1, W3)
  7 update   1: step/update_d1.onnx (W2)
"""
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
SHAPES = {"W1": [8, 16], "W2": [16, 16], "W3": [16, 4]}
rng = np.random.default_rng(11)
INIT = {k: (rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for k, s in SHAPES.items()}
SHAPE_OF = {"x": [2, 8], "target": [2, 4], "h1": [2, 16], "r1": [2, 16], "h2": [2, 16], "r2": [2, 16],
            "d": [2, 4], "loss": [], "dr2": [2, 16], "dr1": [2, 16],
            "W1": SHAPES["W1"], "W2": SHAPES["W2"], "W3": SHAPES["W3"],
            "W1_grad": SHAPES["W1"], "W2_grad": SHAPES["W2"], "W3_grad": SHAPES["W3"]}


def vi(name, shape=None):
    return helper.make_tensor_value_info(name, F, SHAPE_OF[name] if shape is None else shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.array(value, dtype=np.float32), name))


def relu_grad(g, h, out, p):
    """out = g where h > 0, else 0."""
    return [const(f"{p}zero", 0.0),
            helper.make_node("Greater", [h, f"{p}zero"], [f"{p}mask"], name=f"{p}mask"),
            helper.make_node("Where", [f"{p}mask", g, f"{p}zero"], [out], name=f"{p}where")]


def matmul_t(a, b, out, p, trans_a=False, trans_b=False):
    """out = op(a) op(b) with Transpose nodes."""
    nodes = []
    if trans_a:
        nodes.append(helper.make_node("Transpose", [a], [f"{p}aT"], name=f"{p}aT", perm=[1, 0]))
        a = f"{p}aT"
    if trans_b:
        nodes.append(helper.make_node("Transpose", [b], [f"{p}bT"], name=f"{p}bT", perm=[1, 0]))
        b = f"{p}bT"
    return nodes + [helper.make_node("MatMul", [a, b], [out], name=f"{p}mm")]


# The nodes of each stage (forward 0..2, backward 3..5).
STAGE_NODES = {
    0: [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
        helper.make_node("Relu", ["h1"], ["r1"], name="relu1")],
    1: [helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="fc2"),
        helper.make_node("Relu", ["h2"], ["r2"], name="relu2")],
    2: [helper.make_node("MatMul", ["r2", "W3"], ["y"], name="fc3"),
        helper.make_node("Sub", ["y", "target"], ["d"], name="diff"),
        helper.make_node("Mul", ["d", "d"], ["sq"], name="square"),
        helper.make_node("ReduceMean", ["sq"], ["loss"], name="mean", keepdims=0)],
    3: [const("b3_scale", 2.0 / 8.0),
        helper.make_node("Mul", ["d", "b3_scale"], ["dy"], name="b3_dy"),
        *matmul_t("r2", "dy", "W3_grad", "b3_w_", trans_a=True),
        *matmul_t("dy", "W3", "dr2", "b3_x_", trans_b=True)],
    4: [*relu_grad("dr2", "h2", "dh2", "b2_"),
        *matmul_t("r1", "dh2", "W2_grad", "b2_w_", trans_a=True),
        *matmul_t("dh2", "W2", "dr1", "b2_x_", trans_b=True)],
    5: [*relu_grad("dr1", "h1", "dh1", "b1_"),
        *matmul_t("x", "dh1", "W1_grad", "b1_w_", trans_a=True)],
}
STAGES = [  # id, kind, device, inputs, outputs, after
    (0, "forward", 0, ["x", "W1"], ["h1", "r1"], []),
    (1, "forward", 1, ["r1", "W2"], ["h2", "r2"], [0]),
    (2, "forward", 0, ["r2", "W3", "target"], ["loss", "d"], [1]),
    (3, "backward", 0, ["d", "r2", "W3"], ["W3_grad", "dr2"], [1, 2]),
    (4, "backward", 1, ["dr2", "h2", "r1", "W2"], ["W2_grad", "dr1"], [0, 1, 3]),
    (5, "backward", 0, ["dr1", "h1", "x"], ["W1_grad"], [0, 4]),
]
HOME = {"W1": 0, "W2": 1, "W3": 0}

# Hand-derived orders for M = 4 (devices 0 and 1; rank 0 = device 0, whose
# first forward stage is stage 0; S = 2).
#  gpipe: every forward run, then every backward run (micro-batches ascending).
#  1f1b: device 0 (rank 0) warms up with min(4, 2 - 0) = 2 micro-batches
#  (stage 0 of 0 and 1), then alternates: a micro-batch's remaining forward
#  and backward runs, then the next micro-batch's first forward run; device 1
#  (rank 1) warms up with min(4, 2 - 1) = 1 and alternates backward, forward.
M = 4
ORDERS = {
    "gpipe": {
        0: [(0, m) for m in range(M)] + [(2, m) for m in range(M)] + [(3, m) for m in range(M)] + [(5, m) for m in range(M)],
        1: [(1, m) for m in range(M)] + [(4, m) for m in range(M)],
    },
    "1f1b": {
        0: [(0, 0), (0, 1), (2, 0), (3, 0), (5, 0),
            (0, 2), (2, 1), (3, 1), (5, 1),
            (0, 3), (2, 2), (3, 2), (5, 2),
            (2, 3), (3, 3), (5, 3)],
        1: [(1, 0), (4, 0), (1, 1), (4, 1), (1, 2), (4, 2), (1, 3), (4, 3)],
    },
}
OPTIMIZERS = {
    "gpipe": {"name": "sgd", "learning_rate": 0.1, "weight_decay": 0.0, "step_input": None},
    "1f1b": {"name": "adam", "learning_rate": 0.01, "betas": [0.9, 0.999], "eps": 1e-8,
             "weight_decay": 0.0, "step_input": "optimizer.step"},
}


def model(nodes, inputs, outputs, name, initializers=()):
    graph = helper.make_graph(nodes, name, [vi(n) if isinstance(n, str) else n for n in inputs],
                              [vi(n) if isinstance(n, str) else n for n in outputs], initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def state_names(w, opt):
    return [f"{w}.exp_avg", f"{w}.exp_avg_sq"] if opt["name"] == "adam" else []


def update_model(weights, opt):
    """torch.optim's sgd or adam (no weight decay) for `weights`, named as plan.json says."""
    nodes, inputs, outputs = [], [], []
    lr = opt["learning_rate"]
    if opt["name"] == "adam":
        b1, b2 = opt["betas"]
        inputs.append(helper.make_tensor_value_info("optimizer.step", F, []))
        nodes += [const("u_one", 1.0), const("u_b1", b1), const("u_b2", b2), const("u_eps", opt["eps"]),
                  const("u_1mb1", 1.0 - b1), const("u_1mb2", 1.0 - b2), const("u_lr", lr),
                  helper.make_node("Pow", ["u_b1", "optimizer.step"], ["u_b1t"]),
                  helper.make_node("Pow", ["u_b2", "optimizer.step"], ["u_b2t"]),
                  helper.make_node("Sub", ["u_one", "u_b1t"], ["u_bias1"]),
                  helper.make_node("Sub", ["u_one", "u_b2t"], ["u_bias2"]),
                  helper.make_node("Sqrt", ["u_bias2"], ["u_bias2_sqrt"]),
                  helper.make_node("Div", ["u_lr", "u_bias1"], ["u_step_size"])]
    else:
        nodes.append(const("u_lr", lr))
    for w in weights:
        g = f"{w}_grad"
        inputs += [vi(w), vi(g)]
        if opt["name"] == "adam":
            m, v = state_names(w, opt)
            inputs += [vi(m, SHAPES[w]), vi(v, SHAPES[w])]
            p = f"u_{w}_"
            nodes += [helper.make_node("Mul", [m, "u_b1"], [p + "m1"]),
                      helper.make_node("Mul", [g, "u_1mb1"], [p + "m2"]),
                      helper.make_node("Add", [p + "m1", p + "m2"], [f"{m}.updated"]),
                      helper.make_node("Mul", [v, "u_b2"], [p + "v1"]),
                      helper.make_node("Mul", [g, g], [p + "gg"]),
                      helper.make_node("Mul", [p + "gg", "u_1mb2"], [p + "v2"]),
                      helper.make_node("Add", [p + "v1", p + "v2"], [f"{v}.updated"]),
                      helper.make_node("Sqrt", [f"{v}.updated"], [p + "vs"]),
                      helper.make_node("Div", [p + "vs", "u_bias2_sqrt"], [p + "vh"]),
                      helper.make_node("Add", [p + "vh", "u_eps"], [p + "den"]),
                      helper.make_node("Div", [f"{m}.updated", p + "den"], [p + "ratio"]),
                      helper.make_node("Mul", [p + "ratio", "u_step_size"], [p + "delta"]),
                      helper.make_node("Sub", [w, p + "delta"], [f"{w}.updated"])]
            outputs += [vi(f"{w}.updated", SHAPES[w]), vi(f"{m}.updated", SHAPES[w]), vi(f"{v}.updated", SHAPES[w])]
        else:
            nodes += [helper.make_node("Mul", [g, "u_lr"], [f"u_{w}_delta"]),
                      helper.make_node("Sub", [w, f"u_{w}_delta"], [f"{w}.updated"])]
            outputs.append(vi(f"{w}.updated", SHAPES[w]))
    return model(nodes, inputs, outputs, "update")


def source_model():
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h1"], name="fc1"),
             helper.make_node("Relu", ["h1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "W2"], ["h2"], name="fc2"),
             helper.make_node("Relu", ["h2"], ["r2"], name="relu2"),
             helper.make_node("MatMul", ["r2", "W3"], ["y"], name="fc3")]
    return model(nodes, ["x"], [vi("y", [2, 4])], "mlp", [numpy_helper.from_array(v, k) for k, v in INIT.items()])


def write_step(out, schedule, source_sha):
    opt = OPTIMIZERS[schedule]
    os.makedirs(os.path.join(out, "step"), exist_ok=True)
    os.makedirs(os.path.join(out, "stages"), exist_ok=True)
    # The unsplit step.
    init_nodes = [helper.make_node("Identity", [f"{w}.value"], [f"{w}.initial"]) for w in INIT]
    init = model(init_nodes, [], [vi(f"{w}.initial", SHAPES[w]) for w in INIT], "init",
                 [numpy_helper.from_array(v, f"{k}.value") for k, v in INIT.items()])
    onnx.save(init, os.path.join(out, "step", "init.onnx"))
    all_nodes = [n for s in range(6) for n in STAGE_NODES[s]]
    grads = [f"{w}_grad" for w in INIT]
    onnx.save(model(all_nodes, ["x", "target", *INIT], ["loss", *grads], "gradient"),
              os.path.join(out, "step", "gradient.onnx"))
    onnx.save(update_model(list(INIT), opt), os.path.join(out, "step", "update.onnx"))
    # The split step.
    stages = []
    for sid, kind, device, inputs, outputs, after in STAGES:
        onnx.save(model(STAGE_NODES[sid], inputs, outputs, f"s{sid}"), os.path.join(out, "stages", f"s{sid}.onnx"))
        stages.append({"id": sid, "kind": kind, "device": device, "file": f"stages/s{sid}.onnx",
                       "inputs": inputs, "outputs": outputs, "after": after, "per_microbatch": True})
    for device in (0, 1):
        homed = [w for w in INIT if HOME[w] == device]
        onnx.save(update_model(homed, opt), os.path.join(out, "step", f"update_d{device}.onnx"))
        stages.append({"id": len(stages), "kind": "update", "device": device, "file": f"step/update_d{device}.onnx",
                       "weights": homed, "per_microbatch": False})
    weights = []
    for w, shape in SHAPES.items():
        state = [{"name": s, "output": f"{s}.updated"} for s in state_names(w, opt)]
        weights.append({"name": w, "dtype": "float32", "shape": shape, "bytes": 4 * int(np.prod(shape)),
                        "initial": f"{w}.initial", "gradient": f"{w}_grad", "device": HOME[w],
                        "update": {"weight": w, "gradient": f"{w}_grad", "output": f"{w}.updated", "state": state}})
    plan = {
        "format": "onnx-autopar-plan", "version": 1, "mode": "training",
        "source": {"path": "model.onnx", "sha256": source_sha},
        "training": {
            "models": {"init": "step/init.onnx", "gradient": "step/gradient.onnx", "update": "step/update.onnx"},
            "loss": {"spec": "mse:y", "output": "loss", "input": "target", "classes": None},
            "data_inputs": [{"name": "x", "dtype": "float32", "shape": [2, 8]},
                            {"name": "target", "dtype": "float32", "shape": [2, 4]}],
            "optimizer": opt,
            "weights": weights,
            "frozen": [],
            "pipeline": {
                "schedule": schedule, "microbatches": M, "devices": [0, 1], "stages": stages,
                "order": [{"device": d, "runs": [list(r) for r in runs]} for d, runs in ORDERS[schedule].items()],
                "predicted": {"step_us": 100.0, "peak_memory_bytes": [0, 0],
                              "max_stashes": [M, M] if schedule == "gpipe" else [2, 1]},
            },
        },
    }
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)


def main(out):
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    onnx.save(source_model(), path)
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    for schedule in ORDERS:
        write_step(os.path.join(out, schedule), schedule, sha)


if __name__ == "__main__":
    main(sys.argv[1])
