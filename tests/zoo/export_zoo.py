#!/usr/bin/python3
"""Export the model zoo: small instances of real architectures for the end-to-end zoo test.

Each model is built from its architecture with seeded random weights (nothing is
downloaded) and exported with Debian's torch, or written with onnx.helper where
torch cannot produce the pattern (QLinear* quantized graphs, opset 18). Some are
then edited with the onnx package into forms other exporters produce: node lists
out of topological order, weights held in Constant nodes.

Usage:
    /usr/bin/python3 tests/zoo/export_zoo.py OUT_DIR [--models a,b,...]

Writes OUT_DIR/<name>.onnx per model and OUT_DIR/zoo.json, the manifest the test
reads: per model its source, the flags onnx-autopar needs (--dim for dynamic
dims, --input-value for inputs that steer control flow), the runner's flags and
the symbolic dims of its inputs (symbolic_dims: ["batch", ...] for the models
exported with a dynamic batch, [] for the static ones).
Exits non-zero naming every model that failed to export.

Requires Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12).
"""

import argparse
import io
import json
import math
import os
import random
import sys
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm
from onnx import TensorProto, helper, numpy_helper

OPSET = 14


# --------------------------------------------------------------------------
# CNNs
# --------------------------------------------------------------------------

class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class ResidualBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = nn.Conv2d(c, c, 3, padding=1)
        self.b = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return F.relu(x + self.b(F.relu(self.a(x))))


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.blocks = nn.Sequential(*[ResidualBlock(16) for _ in range(3)])
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.down = nn.Conv2d(c, c // 4, 1)
        self.up = nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.up(F.relu(self.down(s))))


class MobileNetLike(nn.Module):
    """Depthwise-separable blocks with squeeze-and-excitation, hardswish."""

    def __init__(self):
        super().__init__()
        layers = [nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.Hardswish()]
        c = 16
        for out in (24, 32):
            layers += [nn.Conv2d(c, c, 3, padding=1, groups=c), nn.BatchNorm2d(c), nn.ReLU6(),
                       SqueezeExcite(c), nn.Conv2d(c, out, 1), nn.BatchNorm2d(out)]
            c = out
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        return self.fc(self.body(x).mean((2, 3)))


class UNetTiny(nn.Module):
    """Encoder-decoder with skip connections, ConvTranspose and Resize."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(3, 8, 3, padding=1)
        self.e2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(16, 8, 2, stride=2)
        self.d1 = nn.Conv2d(16, 8, 3, padding=1)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        a = F.relu(self.e1(x))
        b = F.relu(self.e2(a))
        u = self.up(b) + F.interpolate(b[:, :8], scale_factor=2.0, mode="nearest")
        return self.out(F.relu(self.d1(torch.cat([a, u], 1))))


class Conv1dAudio(nn.Module):
    """A wav2vec-style feature extractor: strided 1-D convolutions, GELU, GroupNorm."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(1, 16, 10, stride=5)
        self.norm = nn.GroupNorm(16, 16)
        self.c2 = nn.Conv1d(16, 32, 3, stride=2)
        self.proj = nn.Linear(32, 24)

    def forward(self, wav):
        x = F.gelu(self.norm(self.c1(wav)))
        x = F.gelu(self.c2(x))
        return self.proj(x.transpose(1, 2))


def torchvision_cnn(name, **kwargs):
    return lambda: getattr(tvm, name)(weights=None, **kwargs)


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------

class EncoderWithPaddingMask(nn.Module):
    """nn.TransformerEncoder with a key-padding mask: torch exports the
    ConstantOfShape -> Mul -> Equal -> Where -> Expand chain for the mask."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class CausalDecoder(nn.Module):
    """GPT-style: token and position embeddings (position ids from Range over
    the input's length), a causal mask made from the length, pre-LN blocks."""

    def __init__(self, vocab=50, d=32, heads=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        n = ids.shape[1]
        pos = torch.arange(n, device=ids.device).unsqueeze(0)
        causal = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
        return self.head(self.blocks(self.tok(ids) + self.pos(pos), mask=causal))


class Seq2Seq(nn.Module):
    """nn.Transformer with a causal target mask and padding masks on both sides."""

    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(32, 4, 1, 1, 64, dropout=0.0, batch_first=True)

    def forward(self, src, tgt, src_pad, tgt_pad):
        n = tgt.shape[1]
        mask = self.t.generate_square_subsequent_mask(n)
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=src_pad,
                      tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)


class VitTiny(nn.Module):
    """Patch embedding, a class token, learned positions, an encoder."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 32, 8, stride=8)
        self.cls = nn.Parameter(torch.randn(1, 1, 32))
        self.pos = nn.Parameter(torch.randn(1, 17, 32))
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        p = torch.cat([self.cls.expand(p.shape[0], -1, -1), p], 1) + self.pos
        return self.head(self.enc(p)[:, 0])


class BertEmbeddings(nn.Module):
    """BERT-style embeddings and an attention mask from a 0/1 input mask
    (Unsqueeze, Cast, Sub, Mul), with a pooler."""

    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        self.token_type = nn.Embedding(2, d)
        self.norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.pool = nn.Linear(d, d)

    def forward(self, ids, mask):
        n = ids.shape[1]
        pos = torch.arange(n).unsqueeze(0).expand_as(ids)
        h = self.norm(self.word(ids) + self.pos(pos) + self.token_type(torch.zeros_like(ids)))
        bias = (1.0 - mask.unsqueeze(1).to(torch.float32)) * -10000.0   # [B, 1, n]
        bias = bias.unsqueeze(1).expand(-1, 4, n, -1).reshape(-1, n, n)  # [B*heads, n, n]
        out, _ = self.attn(h, h, h, attn_mask=bias)
        return torch.tanh(self.pool(out[:, 0]))


class MlpMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.tok = nn.Sequential(nn.Linear(64, 32), nn.GELU(), nn.Linear(32, 64))
        self.chan = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        self.n1 = nn.LayerNorm(16)
        self.n2 = nn.LayerNorm(16)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        p = self.patch(x).flatten(2).transpose(1, 2)
        p = p + self.tok(self.n1(p).transpose(1, 2)).transpose(1, 2)
        p = p + self.chan(self.n2(p))
        return self.head(p.mean(1))


class SwiGluMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(32, 64, bias=False)
        self.up = nn.Linear(32, 64, bias=False)
        self.down = nn.Linear(64, 32, bias=False)
        self.norm = nn.LayerNorm(32)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


# --------------------------------------------------------------------------
# Recurrent
# --------------------------------------------------------------------------

class Recurrent(nn.Module):
    def __init__(self, cell, **kwargs):
        super().__init__()
        self.rnn = cell(16, 24, num_layers=2, batch_first=True, **kwargs)
        self.fc = nn.Linear(24 * (2 if kwargs.get("bidirectional") else 1), 8)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.fc(out)


class GruSeq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(16, 24, batch_first=True)
        self.dec = nn.GRU(16, 24, batch_first=True)
        self.fc = nn.Linear(24, 16)

    def forward(self, src, tgt):
        _, h = self.enc(src)
        out, _ = self.dec(tgt, h)
        return self.fc(out)


# --------------------------------------------------------------------------
# Control flow (scripted)
# --------------------------------------------------------------------------

class GreedyDecode(nn.Module):
    """Greedy decoding: a Loop whose body picks the next token (ArgMax) and
    appends its embedding to a sequence (SequenceInsert), stacked after the
    loop (ConcatFromSequence)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.cell_in = nn.Linear(16, 16)
        self.cell_h = nn.Linear(16, 16)
        self.out = nn.Linear(16, 20)

    def forward(self, h, steps: int):
        token = torch.zeros(h.shape[0], dtype=torch.long)
        outs = []
        for _ in range(steps):
            h = torch.tanh(self.cell_in(self.emb(token)) + self.cell_h(h))
            logits = self.out(h)
            token = logits.argmax(-1)
            outs.append(logits)
        return torch.stack(outs, 1)


class IfOnRate(nn.Module):
    """An If on an input value (a sample rate): the branches differ in shape."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x, rate):
        y = self.fc(x)
        if bool(rate > 16000):
            y = torch.cat([y, y], 1)
        else:
            y = torch.relu(y)
        return y * 2.0


class DetectionHead(nn.Module):
    """Detection-style post-processing: scores, TopK, a threshold, NonZero
    and Gather of the surviving boxes."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU())
        self.cls = nn.Conv2d(8, 4, 1)
        self.box = nn.Conv2d(8, 16, 1)

    def forward(self, x):
        f = self.backbone(x)
        scores = torch.sigmoid(self.cls(f)).flatten(1)            # [1, 4*H*W]
        boxes = self.box(f).reshape(1, 4, 4, -1).permute(0, 3, 1, 2).reshape(1, -1, 4)
        top, idx = torch.topk(scores, 16, dim=1)
        keep = torch.nonzero(top[0] > 0.5).squeeze(1)
        chosen = idx[0].index_select(0, keep) // 4
        return top, boxes[0].index_select(0, chosen)


class DataDependentIfScripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        if bool(x.sum() > 0):
            y = self.a(x)
        else:
            y = self.b(x)
        return y


# --------------------------------------------------------------------------
# Built with onnx.helper
# --------------------------------------------------------------------------

def rng_array(rng, shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return (rng.random(shape) * (hi - lo) + lo).astype(dtype)


def qlinear_model(path):
    """A quantized CNN as ONNX Runtime's quantizer writes it: QuantizeLinear,
    QLinearConv, QLinearMatMul, QLinearAdd-free integer path, DequantizeLinear."""
    rng = np.random.default_rng(7)
    init = []

    def const(name, arr):
        init.append(numpy_helper.from_array(arr, name))
        return name

    s_in, z_in = const("s_in", np.array(0.02, np.float32)), const("z_in", np.array(128, np.uint8))
    w1 = const("w1", rng.integers(0, 255, (8, 3, 3, 3), dtype=np.uint8))
    s_w1, z_w1 = const("s_w1", np.array(0.01, np.float32)), const("z_w1", np.array(127, np.uint8))
    s_c1, z_c1 = const("s_c1", np.array(0.05, np.float32)), const("z_c1", np.array(120, np.uint8))
    b1 = const("b1", rng.integers(-100, 100, (8,), dtype=np.int32))
    w2 = const("w2", rng.integers(0, 255, (8, 8, 3, 3), dtype=np.uint8))
    s_w2, z_w2 = const("s_w2", np.array(0.01, np.float32)), const("z_w2", np.array(128, np.uint8))
    s_c2, z_c2 = const("s_c2", np.array(0.08, np.float32)), const("z_c2", np.array(125, np.uint8))
    shape = const("flat_shape", np.array([1, -1], np.int64))
    wm = const("wm", rng.integers(0, 255, (8 * 8 * 8, 10), dtype=np.uint8))
    s_wm, z_wm = const("s_wm", np.array(0.003, np.float32)), const("z_wm", np.array(128, np.uint8))
    s_o, z_o = const("s_o", np.array(0.1, np.float32)), const("z_o", np.array(128, np.uint8))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", s_in, z_in], ["xq"]),
        helper.make_node("QLinearConv", ["xq", s_in, z_in, w1, s_w1, z_w1, s_c1, z_c1, b1], ["c1"],
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("QLinearConv", ["c1", s_c1, z_c1, w2, s_w2, z_w2, s_c2, z_c2], ["c2"],
                         pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["c2"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["p", shape], ["flat"]),
        helper.make_node("QLinearMatMul", ["flat", s_c2, z_c2, wm, s_wm, z_wm, s_o, z_o], ["mq"]),
        helper.make_node("DequantizeLinear", ["mq", s_o, z_o], ["y"]),
    ]
    graph = helper.make_graph(nodes, "qlinear_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.save(model, path)


def opset18_model(path):
    """Opset 18: ReduceMean with axes as an input, Split with num_outputs,
    LayerNormalization, plus a shape computed at run time."""
    rng = np.random.default_rng(18)
    init = [
        numpy_helper.from_array(rng_array(rng, (16, 32)), "w"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes"),
        numpy_helper.from_array(rng_array(rng, (16,)), "gamma"),
        numpy_helper.from_array(rng_array(rng, (16,)), "beta"),
        numpy_helper.from_array(np.array([0], np.int64), "zero"),
        numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"]),
        helper.make_node("Split", ["h"], ["a", "b"], axis=2, num_outputs=2),
        helper.make_node("Sigmoid", ["b"], ["gate"]),
        helper.make_node("Mul", ["a", "gate"], ["glu"]),
        helper.make_node("LayerNormalization", ["glu", "gamma", "beta"], ["n"], axis=-1),
        helper.make_node("ReduceMean", ["n", "axes"], ["m"], keepdims=1),
        helper.make_node("Sub", ["n", "m"], ["centered"]),
        helper.make_node("Shape", ["centered"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Concat", ["batch", "minus_one"], ["flat_shape"], axis=0),
        helper.make_node("Reshape", ["centered", "flat_shape"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "opset18",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.save(model, path)


def fp16_model(path):
    """A float16 MLP with LayerNorm-free residuals (float16 end to end)."""
    rng = np.random.default_rng(16)
    init = [
        numpy_helper.from_array(rng_array(rng, (32, 64), -0.2, 0.2, np.float16), "w1"),
        numpy_helper.from_array(rng_array(rng, (64,), -0.2, 0.2, np.float16), "b1"),
        numpy_helper.from_array(rng_array(rng, (64, 32), -0.2, 0.2, np.float16), "w2"),
    ]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["o"]),
        helper.make_node("Add", ["o", "x"], ["res"]),
        helper.make_node("Softmax", ["res"], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "fp16_mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [4, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [4, 32])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


# --------------------------------------------------------------------------
# Edits other exporters produce
# --------------------------------------------------------------------------

def shuffle_nodes(model, seed):
    """Writes the main graph's nodes (and every body's) in a random order."""
    rnd = random.Random(seed)

    def shuffle(graph):
        nodes = list(graph.node)
        for n in nodes:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    shuffle(a.g)
        rnd.shuffle(nodes)
        del graph.node[:]
        graph.node.extend(nodes)

    shuffle(model.graph)
    return model


def weights_to_constants(model):
    """Moves every initializer into a Constant node at the front of the graph."""
    constants = [helper.make_node("Constant", [], [t.name], value=t) for t in model.graph.initializer]
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(constants + nodes)
    names = {t.name for t in model.graph.initializer}
    kept = [i for i in model.graph.input if i.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    del model.graph.initializer[:]
    return model


def fp16_weights_model(model):
    """float16 weights read through Cast nodes, as mixed-precision exports store them."""
    casts = []
    for t in model.graph.initializer:
        if t.data_type != TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(t).astype(np.float16)
        name = t.name
        t.CopyFrom(numpy_helper.from_array(arr, name + "_fp16"))
        casts.append(helper.make_node("Cast", [name + "_fp16"], [name], to=TensorProto.FLOAT))
    nodes = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(casts + nodes)
    return model


# --------------------------------------------------------------------------
# The zoo
# --------------------------------------------------------------------------

def f32(*shape):
    return ("float32", shape)


def i64(*shape, hi=10):
    return ("int64", shape, hi)


def boolean(*shape):
    return ("bool", shape)


def example(spec):
    out = []
    for item in spec:
        kind, shape = item[0], item[1]
        if kind == "float32":
            out.append(torch.randn(shape))
        elif kind == "int64":
            out.append(torch.randint(0, item[2], shape, dtype=torch.long))
        elif kind == "bool":
            out.append(torch.zeros(shape, dtype=torch.bool))
        else:
            out.append(item[2])
    return tuple(out)


# name: (how to build, example inputs, input names, dynamic axes, source text,
#        onnx-autopar flags, runner flags, post-processing)
ZOO = {}


def torch_model(name, build, spec, names, source, dynamic=None, autopar=(), runner=(), post=None,
                script=False, opset=OPSET):
    ZOO[name] = dict(kind="torch", build=build, spec=spec, names=names, dynamic=dynamic,
                     source=source, autopar=list(autopar), runner=list(runner), post=post,
                     script=script, opset=opset)


def helper_model(name, write, source, autopar=(), runner=()):
    ZOO[name] = dict(kind="helper", write=write, source=source, autopar=list(autopar),
                     runner=list(runner))


# Most torch models are exported as a user exports a served model: with a
# symbolic "batch" dim 0 on every input (dynamic_axes), from example inputs at
# batch 2 so the trace sees a batch other than 1. Their onnx-autopar and runner
# flags plan and run at --dim batch=2; the zoo test also runs their stages at
# batch 1, 3 and 8 and their batching Triton repositories at two batches.
# Static on purpose, so the static path stays covered: the node-order and
# Constant-weight edits (unsorted_*, constant_weights_*), the scripted control
# flow (greedy_decode_loop, if_on_*), the onnx.helper models, and
# detection_head, whose post-processing indexes sample 0 (boxes[0], top[0]):
# torch bakes batch 1 into its Reshape shapes, so it is batch-specific.
BATCH_FLAGS = ["--dim", "batch=2"]


def batched(spec, names, seq=None):
    """dynamic_axes giving every input dim 0 "batch" (and dim 1 "seq" for the
    inputs named in `seq`)."""
    dyn = {}
    for name in names:
        dyn[name] = {0: "batch"}
        if seq and name in seq:
            dyn[name][1] = "seq"
    return dyn


def dynamic_model(name, build, spec, names, source, seq=None, autopar=(), runner=(), **kwargs):
    """A torch model with a symbolic batch (and `seq` inputs' dim 1 symbolic)."""
    torch_model(name, build, spec, names, source, dynamic=batched(spec, names, seq),
                autopar=BATCH_FLAGS + list(autopar), runner=BATCH_FLAGS + list(runner), **kwargs)


IMG = [f32(2, 3, 32, 32)]
IMG1 = [f32(1, 3, 32, 32)]
dynamic_model("cnn_small", SmallCnn, IMG, ["image"], "torch: Conv/BatchNorm/MaxPool/Linear")
dynamic_model("resnet_tiny", TinyResNet, IMG, ["image"], "torch: residual blocks")
dynamic_model("mobilenet_se", MobileNetLike, IMG, ["image"],
              "torch: depthwise-separable + squeeze-excite")
dynamic_model("unet_tiny", UNetTiny, IMG, ["image"], "torch: skips, ConvTranspose, Resize")
dynamic_model("tv_squeezenet1_1", torchvision_cnn("squeezenet1_1"), [f32(2, 3, 64, 64)], ["image"],
              "torchvision squeezenet1_1 (64x64)")
dynamic_model("tv_shufflenet_v2", torchvision_cnn("shufflenet_v2_x0_5"), [f32(2, 3, 64, 64)],
              ["image"], "torchvision shufflenet_v2_x0_5 (64x64)")
dynamic_model("tv_mobilenet_v3_small", torchvision_cnn("mobilenet_v3_small"),
              [f32(2, 3, 64, 64)], ["image"], "torchvision mobilenet_v3_small (64x64)")
dynamic_model("tv_resnet18_dynamic_batch", torchvision_cnn("resnet18"), [f32(2, 3, 32, 32)],
              ["image"], "torchvision resnet18")
dynamic_model("conv1d_audio", Conv1dAudio, [f32(2, 1, 400)], ["wav"],
              "torch: wav2vec-style conv feature extractor")
dynamic_model("encoder_padding_mask", EncoderWithPaddingMask, [f32(2, 10, 32), boolean(2, 10)],
              ["x", "pad"], "torch nn.TransformerEncoder with key-padding mask")
dynamic_model("encoder_padding_mask_dynamic", EncoderWithPaddingMask,
              [f32(2, 10, 32), boolean(2, 10)], ["x", "pad"],
              "torch nn.TransformerEncoder with key-padding mask, dynamic length too",
              seq=["x", "pad"], autopar=["--dim", "seq=10"], runner=["--dim", "seq=10"])
dynamic_model("causal_decoder", CausalDecoder, [i64(2, 12, hi=50)], ["ids"],
              "torch GPT-style decoder with causal mask and Range positions, dynamic length too",
              seq=["ids"], autopar=["--dim", "seq=12"], runner=["--dim", "seq=12"])
dynamic_model("seq2seq_transformer", Seq2Seq,
              [f32(2, 9, 32), f32(2, 7, 32), boolean(2, 9), boolean(2, 7)],
              ["src", "tgt", "src_pad", "tgt_pad"],
              "torch nn.Transformer with causal and padding masks")
dynamic_model("vit_tiny", VitTiny, IMG, ["image"], "torch ViT: patches, class token, encoder")
dynamic_model("bert_embeddings_mask", BertEmbeddings, [i64(2, 12, hi=100), i64(2, 12, hi=2)],
              ["ids", "mask"], "torch BERT-style embeddings, attention mask from 0/1 input")
dynamic_model("mlp_mixer", MlpMixer, IMG, ["image"], "torch MLP-Mixer")
dynamic_model("swiglu_mlp", SwiGluMlp, [f32(2, 8, 32)], ["x"], "torch SwiGLU block")
dynamic_model("lstm", lambda: Recurrent(nn.LSTM), [f32(2, 12, 16)], ["x"],
              "torch nn.LSTM, 2 layers")
dynamic_model("lstm_bidirectional", lambda: Recurrent(nn.LSTM, bidirectional=True),
              [f32(2, 12, 16)], ["x"], "torch nn.LSTM bidirectional")
dynamic_model("gru", lambda: Recurrent(nn.GRU), [f32(2, 12, 16)], ["x"], "torch nn.GRU, 2 layers")
dynamic_model("gru_seq2seq", GruSeq2Seq, [f32(2, 10, 16), f32(2, 6, 16)], ["src", "tgt"],
              "torch GRU encoder-decoder")
torch_model("greedy_decode_loop", GreedyDecode, [f32(2, 16), ("int", (), 5)], ["h", "steps"],
            "torch.jit.script greedy decoding: Loop with a sequence", script=True,
            autopar=["--input-value", "steps=5"])
torch_model("if_on_rate", IfOnRate, [f32(2, 16), i64(hi=1)], ["x", "rate"],
            "torch.jit.script If on an input value (branches differ in shape)", script=True)
torch_model("if_on_rate_bound", IfOnRate, [f32(2, 16), i64(hi=1)], ["x", "rate"],
            "torch.jit.script If on an input value, bound with --input-value", script=True,
            autopar=["--input-value", "rate=8000"], runner=["--input-value", "rate=8000"])
torch_model("if_on_data", DataDependentIfScripted, [f32(2, 16)], ["x"],
            "torch.jit.script If on a data-dependent condition", script=True)
torch_model("detection_head", DetectionHead, IMG1, ["image"],
            "torch detection head: TopK, NonZero, Gather")
torch_model("unsorted_resnet_tiny", TinyResNet, IMG1, ["image"],
            "torch residual net, nodes shuffled with onnx", post=lambda m: shuffle_nodes(m, 17))
torch_model("unsorted_if", DataDependentIfScripted, [f32(2, 16)], ["x"],
            "scripted If, main graph and bodies shuffled with onnx", script=True,
            post=lambda m: shuffle_nodes(m, 5))
torch_model("constant_weights_cnn", SmallCnn, IMG1, ["image"],
            "torch CNN, weights moved into Constant nodes", post=weights_to_constants)
torch_model("constant_weights_encoder", EncoderWithPaddingMask, [f32(2, 10, 32), boolean(2, 10)],
            ["x", "pad"], "torch encoder, weights in Constant nodes, nodes shuffled",
            post=lambda m: shuffle_nodes(weights_to_constants(m), 3))
dynamic_model("fp16_weights_mlp_mixer", MlpMixer, IMG, ["image"],
              "torch MLP-Mixer with float16 weights behind Cast", post=fp16_weights_model)
dynamic_model("opset17_swiglu", SwiGluMlp, [f32(2, 8, 32)], ["x"], "torch SwiGLU at opset 17",
              opset=17)
helper_model("qlinear_cnn", qlinear_model, "onnx.helper: QLinearConv/QLinearMatMul (uint8)")
helper_model("opset18_glu", opset18_model,
             "onnx.helper, opset 18: Split num_outputs, ReduceMean axes input, LayerNormalization")
helper_model("fp16_mlp", fp16_model, "onnx.helper: float16 end to end")


def export_torch(name, entry, path):
    torch.manual_seed(sum(map(ord, name)))
    module = entry["build"]().eval()
    inputs = example(entry["spec"])
    target = torch.jit.script(module) if entry["script"] else module
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(target, inputs, buffer, opset_version=entry["opset"],
                          input_names=entry["names"], output_names=None,
                          dynamic_axes=entry["dynamic"], do_constant_folding=True)
    model = onnx.load_from_string(buffer.getvalue())
    if entry["post"] is not None:
        model = entry["post"](model)
    onnx.save(model, path)


def symbolic_dims(path):
    """The named dims of the model's inputs, in order of first use ("batch" first
    for the dynamic-batch models); [] for a static model."""
    names = []
    for inp in onnx.load(path).graph.input:
        for d in inp.type.tensor_type.shape.dim:
            if d.dim_param and d.dim_param not in names:
                names.append(d.dim_param)
    return names


def count_nodes(path):
    model = onnx.load(path)
    return len(model.graph.node)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = args.models.split(",") if args.models else list(ZOO)
    os.makedirs(args.out_dir, exist_ok=True)
    torch.set_num_threads(1)
    manifest = []
    failed = []
    for name in names:
        if name not in ZOO:
            failed.append(f"{name}: no such model")
            continue
        entry = ZOO[name]
        path = os.path.join(args.out_dir, f"{name}.onnx")
        try:
            if entry["kind"] == "torch":
                export_torch(name, entry, path)
            else:
                entry["write"](path)
        except Exception as e:  # noqa: BLE001 - reported per model
            failed.append(f"{name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            continue
        manifest.append(dict(name=name, file=f"{name}.onnx", source=entry["source"],
                             nodes=count_nodes(path), autopar=entry["autopar"],
                             runner=entry["runner"], symbolic_dims=symbolic_dims(path)))
    with open(os.path.join(args.out_dir, "zoo.json"), "w") as f:
        json.dump({"models": manifest}, f, indent=1)
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    print(f"exported {len(manifest)} of {len(names)} models to {args.out_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
