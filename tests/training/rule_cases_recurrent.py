"""Finite-difference cases: LSTM, GRU and RNN, which the training step unrolls
into standard operators (training/recurrent_lowering.h) before the gradient
pass, so these test the lowering and the rules of what it writes together.

Every operand (X, W, R, B, initial_h, initial_c, P) is a trained weight, so
the gradients of the inputs and of the initial states are checked too; the
case's Y is every present output flattened and concatenated.

Run as a script, it writes the forward cases of recurrent_lowering.test.mjs
instead (the same variants in float32, X a graph input):

    /usr/bin/python3 tests/training/rule_cases_recurrent.py forward OUT_DIR
    /usr/bin/python3 tests/training/rule_cases_recurrent.py expose STEP_MODEL MODEL OUT

`expose` copies a written gradient model with the recurrent node's outputs
(which the lowering writes under their own names) added as graph outputs, and
prints the operator types of its nodes as JSON.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from rule_case import FLOAT32, FLOAT64, Case, file_name, node, rand, seed_of

SEQ, BATCH, INPUT, HIDDEN = 3, 2, 3, 4
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
OPSET = 17

# name: (operator, attributes, optional inputs, outputs)
VARIANTS = {
    "lstm_forward": ("LSTM", {}, {"B"}, ("Y", "Y_h", "Y_c")),
    "lstm_reverse_initial_states": (
        "LSTM", {"direction": "reverse"}, {"B", "initial_h", "initial_c"}, ("Y", "Y_h", "Y_c")),
    "lstm_bidirectional_sequence_lens": (
        "LSTM", {"direction": "bidirectional"}, {"B", "initial_h", "initial_c", "sequence_lens"},
        ("Y", "Y_h", "Y_c")),
    "lstm_no_bias_y_h_only": ("LSTM", {}, set(), ("Y_h",)),
    "lstm_layout1_bidirectional": (
        "LSTM", {"direction": "bidirectional", "layout": 1}, {"B", "initial_h", "initial_c"},
        ("Y", "Y_h", "Y_c")),
    "lstm_peepholes": ("LSTM", {}, {"B", "initial_c", "P"}, ("Y", "Y_c")),
    "lstm_activations_relu": (
        "LSTM", {"activations": ["Sigmoid", "Relu", "Tanh"]}, {"B"}, ("Y",)),
    "gru_forward": ("GRU", {}, {"B"}, ("Y", "Y_h")),
    "gru_linear_before_reset": ("GRU", {"linear_before_reset": 1}, {"B", "initial_h"}, ("Y", "Y_h")),
    "gru_reverse_initial_h": ("GRU", {"direction": "reverse"}, {"B", "initial_h"}, ("Y_h",)),
    "gru_bidirectional_linear_before_reset_layout1": (
        "GRU", {"direction": "bidirectional", "linear_before_reset": 1, "layout": 1},
        {"B", "initial_h", "sequence_lens"}, ("Y", "Y_h")),
    "gru_bidirectional_no_bias": ("GRU", {"direction": "bidirectional"}, set(), ("Y", "Y_h")),
    "gru_reverse_linear_before_reset_no_bias": (
        "GRU", {"direction": "reverse", "linear_before_reset": 1}, set(), ("Y",)),
    "rnn_forward": ("RNN", {}, {"B"}, ("Y", "Y_h")),
    "rnn_reverse_relu": ("RNN", {"direction": "reverse", "activations": ["Relu"]},
                         {"B", "initial_h"}, ("Y", "Y_h")),
    "rnn_bidirectional_layout1": (
        "RNN", {"direction": "bidirectional", "layout": 1}, {"B", "initial_h", "sequence_lens"},
        ("Y", "Y_h")),
    "rnn_no_bias_y_only": ("RNN", {}, set(), ("Y",)),
}

INPUT_SLOTS = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
OUTPUT_SLOTS = ["Y", "Y_h", "Y_c"]


def shapes(op, attrs, layout=None):
    """The shapes of every operand and output of a variant."""
    dirs = 2 if attrs.get("direction") == "bidirectional" else 1
    layout = attrs.get("layout", 0) if layout is None else layout
    gh = GATES[op] * HIDDEN
    state = [dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, dirs, HIDDEN]
    return {
        "X": [SEQ, BATCH, INPUT] if layout == 0 else [BATCH, SEQ, INPUT],
        "W": [dirs, gh, INPUT], "R": [dirs, gh, HIDDEN], "B": [dirs, 2 * gh],
        "sequence_lens": [BATCH], "initial_h": state, "initial_c": state, "P": [dirs, 3 * HIDDEN],
        "Y": [SEQ, dirs, BATCH, HIDDEN] if layout == 0 else [BATCH, SEQ, dirs, HIDDEN],
        "Y_h": state, "Y_c": state,
    }


def trim(names):
    while names and not names[-1]:
        names.pop()
    return names


def recurrent_node(op, attrs, inputs, outputs):
    """The node, reading operands named after their slots (lower case)."""
    ins = trim([s.lower() if s in inputs or s in ("X", "W", "R") else "" for s in INPUT_SLOTS])
    outs = trim([s.lower() if s in outputs else "" for s in OUTPUT_SLOTS])
    return helper.make_node(op, ins, outs, hidden_size=HIDDEN, **attrs)


def operands(name, op, attrs, inputs, dtype):
    """Random values of the float operands present, and sequence_lens."""
    rng = np.random.default_rng(seed_of(name))
    s = shapes(op, attrs)
    values = {}
    for slot in INPUT_SLOTS:
        if slot == "sequence_lens" or (slot not in inputs and slot not in ("X", "W", "R")):
            continue
        values[slot.lower()] = rand(rng, *s[slot]).astype(dtype)
    constants = {}
    if "sequence_lens" in inputs:
        constants["sequence_lens"] = np.full([BATCH], SEQ, dtype=np.int32)
    return values, constants


def flatten_outputs(outputs, total_name):
    """Nodes concatenating the present outputs, flattened, into `total_name`."""
    nodes = [node("Reshape", [s.lower(), "flat_shape"], [s.lower() + "_flat"]) for s in outputs]
    nodes.append(node("Concat", [s.lower() + "_flat" for s in outputs], [total_name], axis=0))
    return nodes


def fd_case(name):
    op, attrs, inputs, outputs = VARIANTS[name]
    values, constants = operands(name, op, attrs, inputs, FLOAT64)
    constants["flat_shape"] = np.array([-1], dtype=np.int64)
    s = shapes(op, attrs)
    total = sum(int(np.prod(s[o])) for o in outputs)
    nodes = [recurrent_node(op, attrs, inputs, outputs)] + flatten_outputs(outputs, "all_outputs")
    return Case(nodes, "all_outputs", [total], values, constants, opset=OPSET, dtype=FLOAT64)


CASES = [(name, lambda rng, name=name: fd_case(name)) for name in VARIANTS]


# --- forward cases (recurrent_lowering.test.mjs) ----------------------------

def tensor_info(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def forward_models(name):
    """(model, reference, x, weights): the variant in float32 with X a graph
    input and the loss a sum of its outputs (so the training step unrolls it),
    and the model ONNX Runtime computes the expected outputs with: the same
    node, except that layout 1 (which ORT's kernels refuse) becomes layout 0
    between Transposes."""
    op, attrs, inputs, outputs = VARIANTS[name]
    values, constants = operands(name, op, attrs, inputs, FLOAT32)
    s = shapes(op, attrs)
    x = values.pop("x")
    weights = values
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    inits += [numpy_helper.from_array(v, k) for k, v in constants.items()]
    inits.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat_shape"))
    out_infos = [tensor_info(o.lower(), s[o]) for o in outputs]

    nodes = [recurrent_node(op, attrs, inputs, outputs)] + flatten_outputs(outputs, "all_outputs")
    nodes.append(node("ReduceSum", ["all_outputs"], ["loss"], keepdims=0))
    graph = helper.make_graph(nodes, name, [tensor_info("x", s["X"])],
                              [tensor_info("loss", [])] + out_infos, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)

    ref_nodes = []
    if attrs.get("layout", 0) == 1:
        ref_attrs = {k: v for k, v in attrs.items() if k != "layout"}
        ref_nodes.append(node("Transpose", ["x"], ["ref_x"], perm=[1, 0, 2]))
        for state in ("initial_h", "initial_c"):
            if state in inputs:
                ref_nodes.append(node("Transpose", [state.lower()], ["ref_" + state.lower()], perm=[1, 0, 2]))
        ins = trim([("ref_" if s in ("X", "initial_h", "initial_c") else "") + s.lower()
                    if s in inputs or s in ("X", "W", "R") else "" for s in INPUT_SLOTS])
        outs = trim(["ref_" + s.lower() if s in outputs else "" for s in OUTPUT_SLOTS])
        ref_nodes.append(helper.make_node(op, ins, outs, hidden_size=HIDDEN, **ref_attrs))
        for o in outputs:
            perm = [2, 0, 1, 3] if o == "Y" else [1, 0, 2]
            ref_nodes.append(node("Transpose", ["ref_" + o.lower()], [o.lower()], perm=perm))
    else:
        ref_nodes.append(recurrent_node(op, attrs, inputs, outputs))
    ref_graph = helper.make_graph(ref_nodes, name + "_reference", [tensor_info("x", s["X"])], out_infos,
                                  initializer=[i for i in inits if i.name != "flat_shape"])
    reference = helper.make_model(ref_graph, opset_imports=[helper.make_opsetid("", OPSET)])
    reference.ir_version = 8
    onnx.checker.check_model(reference, full_check=True)
    return model, reference, x, weights, [o.lower() for o in outputs]


def write_forward_cases(out_dir):
    for name in VARIANTS:
        folder = os.path.join(out_dir, name)
        os.makedirs(os.path.join(folder, "weights"), exist_ok=True)
        model, reference, x, weights, outputs = forward_models(name)
        onnx.save(model, os.path.join(folder, "model.onnx"))
        onnx.save(reference, os.path.join(folder, "reference.onnx"))
        onnx.save_tensor(numpy_helper.from_array(x, "x"), os.path.join(folder, "x.pb"))
        for k, v in weights.items():
            onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(folder, "weights", file_name(k) + ".pb"))
        meta = {"name": name, "op": VARIANTS[name][0], "outputs": outputs,
                "weights": {k: file_name(k) + ".pb" for k in weights}}
        with open(os.path.join(folder, "case.json"), "w") as f:
            json.dump(meta, f, indent=1)
    print(f"wrote {len(VARIANTS)} forward cases to {out_dir}")


def expose(step_path, model_path, out_path):
    step = onnx.load(step_path)
    model = onnx.load(model_path)
    wanted = {o.name: o for o in model.graph.output if o.name != "loss"}
    step.graph.output.extend(wanted.values())
    onnx.save(step, out_path)
    print(json.dumps(sorted({n.op_type for n in step.graph.node})))


if __name__ == "__main__":
    if sys.argv[1] == "forward":
        write_forward_cases(sys.argv[2])
    elif sys.argv[1] == "expose":
        expose(*sys.argv[2:5])
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
