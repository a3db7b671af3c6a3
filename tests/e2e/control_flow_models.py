#!/usr/bin/python3
"""Writes the models of tests/e2e/control_flow.test.mjs, with onnx.helper.

  vad_if.onnx     a voice-activity detector (Silero-like) whose whole network
                  sits inside If(sr == 16000): each branch a Conv front end, an
                  LSTM cell fed by the `state` input [2, batch, 128] (h and c
                  stacked) and a sigmoid head. The branch reshapes with a shape
                  computed from the outer input `x` (Shape -> Gather -> Concat),
                  so its shapes need the outer graph's bound dims and folding.
  vad_if_inputs/  input_N.pb for vad_if.onnx: sr = 16000, batch 2, seeded x
                  and state (the runner's random inputs would not pick 16000).
  sequence_chain.onnx  SequenceConstruct -> SequenceInsert -> SequenceAt /
                  ConcatFromSequence between ordinary nodes: values a split
                  must keep inside one stage.
  scan_rnn.onnx   a tanh RNN written as a Scan over axis 1 of x [batch, 6, 16]
                  (opset 14 form: scan_input_axes, scan_output_axes), between
                  MatMuls; its body reshapes each step's state to
                  [batch, 4, 4] with a shape computed from the outer x
                  (Shape -> Gather), so the Scan's output shapes need the
                  outer graph's bound batch and folding.

Usage: /usr/bin/python3 tests/e2e/control_flow_models.py OUT_DIR
Requires Debian's python3-onnx (1.12).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14
HIDDEN = 128


def weight(rng, name, shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def vad_branch(rng, tag, kernel, channels):
    """One branch: Conv front end -> mean over time -> LSTM(state) -> head.

    Reads the outer values x [batch, 1, 512] and state [2, batch, 128];
    returns (prob [batch, 1], new_state [2, batch, 128])."""
    p = lambda n: f"{tag}_{n}"  # names unique across both branches
    inits = [
        weight(rng, p("w1"), [channels, 1, kernel]), weight(rng, p("b1"), [channels]),
        weight(rng, p("w2"), [channels, channels, 3]), weight(rng, p("b2"), [channels]),
        weight(rng, p("W"), [1, 4 * HIDDEN, channels], 0.1),
        weight(rng, p("R"), [1, 4 * HIDDEN, HIDDEN], 0.05),
        weight(rng, p("B"), [1, 8 * HIDDEN], 0.1),
        weight(rng, p("head_w"), [HIDDEN, 1]), weight(rng, p("head_b"), [1]),
        ints(p("zero"), [0]), ints(p("one"), [1]), ints(p("two"), [2]),
        ints(p("minus1"), [-1]), ints(p("axis0"), [0]),
    ]
    nodes = [
        helper.make_node("Conv", ["x", p("w1"), p("b1")], [p("c1")], name=p("conv1"),
                         pads=[kernel // 2, kernel // 2], strides=[2]),
        helper.make_node("Relu", [p("c1")], [p("r1")], name=p("relu1")),
        helper.make_node("Conv", [p("r1"), p("w2"), p("b2")], [p("c2")], name=p("conv2"),
                         pads=[1, 1], strides=[2]),
        helper.make_node("Relu", [p("c2")], [p("r2")], name=p("relu2")),
        helper.make_node("ReduceMean", [p("r2")], [p("pooled")], name=p("pool"), axes=[2],
                         keepdims=0),
        # [batch, C] -> [1, batch, C] through a shape computed from x: the
        # branch's shapes rest on the outer graph's bound batch.
        helper.make_node("Shape", ["x"], [p("xshape")], name=p("shape")),
        helper.make_node("Gather", [p("xshape"), p("zero")], [p("batch")], name=p("batch_of"),
                         axis=0),
        helper.make_node("Concat", [p("one"), p("batch"), p("minus1")], [p("seq_shape")],
                         name=p("seq_shape_of"), axis=0),
        helper.make_node("Reshape", [p("pooled"), p("seq_shape")], [p("seq")], name=p("to_seq")),
        helper.make_node("Split", ["state"], [p("h0"), p("c0")], name=p("split_state"), axis=0),
        helper.make_node("LSTM", [p("seq"), p("W"), p("R"), p("B"), "", p("h0"), p("c0")],
                         [p("Y"), p("Yh"), p("Yc")], name=p("lstm"), hidden_size=HIDDEN),
        helper.make_node("Concat", [p("Yh"), p("Yc")], [p("new_state")], name=p("state_out"),
                         axis=0),
        helper.make_node("Squeeze", [p("Yh"), p("axis0")], [p("h")], name=p("squeeze")),
        helper.make_node("Relu", [p("h")], [p("hr")], name=p("relu3")),
        helper.make_node("MatMul", [p("hr"), p("head_w")], [p("logit0")], name=p("head")),
        helper.make_node("Add", [p("logit0"), p("head_b")], [p("logit")], name=p("head_bias")),
        helper.make_node("Sigmoid", [p("logit")], [p("prob")], name=p("sigmoid")),
    ]
    outputs = [helper.make_tensor_value_info(p("prob"), TensorProto.FLOAT, None),
               helper.make_tensor_value_info(p("new_state"), TensorProto.FLOAT, None)]
    return helper.make_graph(nodes, f"{tag}_branch", [], outputs, initializer=inits)


def vad_model():
    rng = np.random.default_rng(16000)
    then_branch = vad_branch(rng, "sr16k", kernel=5, channels=32)
    else_branch = vad_branch(rng, "sr8k", kernel=3, channels=16)
    nodes = [
        helper.make_node("Equal", ["sr", "rate16k"], ["is16k"], name="is_16k"),
        helper.make_node("If", ["is16k"], ["prob", "new_state"], name="by_rate",
                         then_branch=then_branch, else_branch=else_branch),
    ]
    graph = helper.make_graph(
        nodes, "vad_if",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 512]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, []),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "batch", HIDDEN])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["batch", 1]),
         helper.make_tensor_value_info("new_state", TensorProto.FLOAT, [2, "batch", HIDDEN])],
        initializer=[numpy_helper.from_array(np.array(16000, dtype=np.int64), "rate16k")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def vad_inputs(folder, batch=2):
    rng = np.random.default_rng(7)
    os.makedirs(folder, exist_ok=True)
    tensors = [
        numpy_helper.from_array(rng.uniform(-1, 1, (batch, 1, 512)).astype(np.float32), "x"),
        numpy_helper.from_array(np.array(16000, dtype=np.int64), "sr"),
        numpy_helper.from_array(rng.uniform(-1, 1, (2, batch, HIDDEN)).astype(np.float32),
                                "state"),
    ]
    for i, t in enumerate(tensors):
        with open(os.path.join(folder, f"input_{i}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def sequence_model():
    rng = np.random.default_rng(3)
    inits = [weight(rng, f"w{i}", [16, 16]) for i in range(6)] + [ints("at", 1)]
    nodes = [
        helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm_a"),
        helper.make_node("Relu", ["a"], ["a_r"], name="relu_a"),
        helper.make_node("MatMul", ["x", "w1"], ["b"], name="mm_b"),
        helper.make_node("Tanh", ["b"], ["b_t"], name="tanh_b"),
        helper.make_node("SequenceConstruct", ["a_r", "b_t"], ["seq"], name="construct"),
        helper.make_node("MatMul", ["b_t", "w2"], ["c"], name="mm_c"),
        helper.make_node("Sigmoid", ["c"], ["c_s"], name="sigmoid_c"),
        helper.make_node("SequenceInsert", ["seq", "c_s"], ["seq2"], name="insert"),
        helper.make_node("SequenceAt", ["seq2", "at"], ["picked"], name="at"),
        helper.make_node("ConcatFromSequence", ["seq2"], ["stacked"], name="concat", axis=0,
                         new_axis=0),
        helper.make_node("MatMul", ["picked", "w3"], ["d"], name="mm_d"),
        helper.make_node("MatMul", ["stacked", "w4"], ["e"], name="mm_e"),
        helper.make_node("Relu", ["e"], ["e_r"], name="relu_e"),
        helper.make_node("MatMul", ["e_r", "w5"], ["f"], name="mm_f"),
    ]
    graph = helper.make_graph(
        nodes, "sequence_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("d", TensorProto.FLOAT, [4, 16]),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, [12, 16])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def scan_model():
    rng = np.random.default_rng(9)
    body_inits = [weight(rng, "wx", [16, 16]), weight(rng, "wh", [16, 16]),
                  ints("zero_axes", [0]), ints("four_rest", [4, -1])]
    body_nodes = [
        helper.make_node("MatMul", ["x_t", "wx"], ["xw"], name="step_x"),
        helper.make_node("MatMul", ["h_in", "wh"], ["hw"], name="step_h"),
        helper.make_node("Add", ["xw", "hw"], ["pre"], name="step_add"),
        helper.make_node("Tanh", ["pre"], ["h_out"], name="step_tanh"),
        # [batch, 16] -> [batch, 4, 4] through the outer `batch`.
        helper.make_node("Unsqueeze", ["batch", "zero_axes"], ["batch_1d"], name="step_batch"),
        helper.make_node("Concat", ["batch_1d", "four_rest"], ["grid_shape"], name="step_shape",
                         axis=0),
        helper.make_node("Reshape", ["h_out", "grid_shape"], ["grid"], name="step_grid"),
    ]
    body = helper.make_graph(
        body_nodes, "rnn_step",
        [helper.make_tensor_value_info("h_in", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("h_out", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT, None)],
        initializer=body_inits)
    inits = [weight(rng, "w_in", [16, 16]), weight(rng, "w_out", [16, 16]),
             weight(rng, "w_h", [16, 8]), ints("zero", 0), ints("flat_shape", [0, 6, 16])]
    nodes = [
        helper.make_node("MatMul", ["x", "w_in"], ["embedded"], name="embed"),
        helper.make_node("Relu", ["embedded"], ["embedded_r"], name="embed_relu"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape_of"),
        helper.make_node("Gather", ["x_shape", "zero"], ["batch"], name="batch_of", axis=0),
        helper.make_node("Scan", ["h0", "embedded_r"], ["h_last", "grids"], name="rnn",
                         body=body, num_scan_inputs=1, scan_input_axes=[1],
                         scan_output_axes=[1]),
        helper.make_node("Reshape", ["grids", "flat_shape"], ["steps"], name="flatten_steps"),
        helper.make_node("MatMul", ["steps", "w_out"], ["projected"], name="project"),
        helper.make_node("Sigmoid", ["projected"], ["y"], name="head"),
        helper.make_node("MatMul", ["h_last", "w_h"], ["h_proj"], name="project_h"),
    ]
    graph = helper.make_graph(
        nodes, "scan_rnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, 16]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 6, 16]),
         helper.make_tensor_value_info("h_proj", TensorProto.FLOAT, ["batch", 8])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    onnx.save(vad_model(), os.path.join(out, "vad_if.onnx"))
    vad_inputs(os.path.join(out, "vad_if_inputs"))
    onnx.save(sequence_model(), os.path.join(out, "sequence_chain.onnx"))
    onnx.save(scan_model(), os.path.join(out, "scan_rnn.onnx"))


if __name__ == "__main__":
    main()
