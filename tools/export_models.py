#!/usr/bin/python3
"""Export real model architectures to ONNX, with random weights, for tests and benchmarks.

The ONNX model-partitioning tool is tested and benchmarked on these files. Nothing
is downloaded: every model is built from its architecture with seeded random
weights, so the same file comes out on every run.

Usage:
    /usr/bin/python3 tools/export_models.py OUT_DIR [--models a,b,...|small|all]
                                           [--opset 13] [--force] [--verbose]

Writes OUT_DIR/<name>.onnx for each model. A model whose file exists and is newer
than this script is skipped unless --force is given (use --force after changing
--opset: the check looks only at file times). Every exported file is run
through onnx.checker and onnx.shape_inference; if any model fails, the script
prints one "FAILED <name>: <reason>" line for it and exits non-zero.

Requires Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12).
"""

import argparse
import hashlib
import math
import os
import sys
import time
import warnings
import zlib

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision.models as tvm

SCRIPT_MTIME = os.path.getmtime(os.path.abspath(__file__))

# The default set: fast enough for CI.
SMALL_SET = [
    "resnet18", "mobilenet_v2", "squeezenet1_1", "googlenet", "resnet50",
    "transformer_encoder", "bert_tiny_like", "gpt2_tiny_like",
    "lstm", "lstm_bidirectional", "gru", "control_flow_if", "control_flow_loop",
    "resnet18_dynbatch", "transformer_encoder_masked_dynbatch", "transformer_seq2seq_dynbatch",
]


# --------------------------------------------------------------------------
# Input specs: a list of (input name, shape, dtype).
# --------------------------------------------------------------------------

def image(size=224):
    return [("input", (1, 3, size, size), torch.float32)]


def tokens(seq=128):
    return [("input_ids", (1, seq), torch.int64)]


def sequence(seq, features, name="input"):
    return [(name, (1, seq, features), torch.float32)]


def make_inputs(spec):
    """Deterministic example inputs; the random generator is already seeded."""
    out = []
    for _, shape, dtype in spec:
        if dtype == torch.int64:  # token ids, valid for every vocabulary here
            out.append(torch.randint(0, 1000, shape, dtype=dtype))
        else:
            out.append(torch.randn(shape, dtype=dtype))
    return tuple(out)


# --------------------------------------------------------------------------
# torchvision CNNs
# --------------------------------------------------------------------------

def torchvision_cnn(name, **kwargs):
    def build():
        return getattr(tvm, name)(weights=None, **kwargs)
    return build


# --------------------------------------------------------------------------
# nn.TransformerEncoder / nn.Transformer
# --------------------------------------------------------------------------

def transformer_encoder():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                       dropout=0.0, batch_first=True)
    # enable_nested_tensor=False keeps the encoder off the nested-tensor fast path.
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)


class MaskedTransformerEncoder(nn.Module):
    """nn.TransformerEncoder with a padding mask: `mask` < 0 marks a padded
    position (random inputs pad about half); position 0 is never padded, so
    no row attends to nothing."""

    def __init__(self):
        super().__init__()
        self.encoder = transformer_encoder()

    def forward(self, src, mask):
        pad = mask < 0
        pad = torch.cat([torch.zeros_like(pad[:, :1]), pad[:, 1:]], dim=1)
        return self.encoder(src, src_key_padding_mask=pad)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, d_model=256, seq=32):
        super().__init__()
        self.transformer = nn.Transformer(d_model=d_model, nhead=4, num_encoder_layers=2,
                                          num_decoder_layers=2, dim_feedforward=1024,
                                          dropout=0.0, batch_first=True)
        self.register_buffer("tgt_mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, src, tgt):
        return self.transformer(src, tgt, tgt_mask=self.tgt_mask)


# --------------------------------------------------------------------------
# BERT-like encoder and GPT-2-like decoder, written with plain nn modules
# --------------------------------------------------------------------------

class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, hidden)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, mask=None):
        b, s, h = x.shape
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(ctx.transpose(1, 2).reshape(b, s, h))


class FeedForward(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class BertLayer(nn.Module):
    """Post-LayerNorm block, as in BERT."""

    def __init__(self, hidden, heads, ffn):
        super().__init__()
        self.attn = SelfAttention(hidden, heads)
        self.ln1 = nn.LayerNorm(hidden)
        self.ffn = FeedForward(hidden, ffn)
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.ffn(x))


class Gpt2Block(nn.Module):
    """Pre-LayerNorm block with a causal mask, as in GPT-2."""

    def __init__(self, hidden, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = SelfAttention(hidden, heads)
        self.ln2 = nn.LayerNorm(hidden)
        self.ffn = FeedForward(hidden, 4 * hidden)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.ffn(self.ln2(x))


class BertLike(nn.Module):
    def __init__(self, layers, hidden, heads, ffn, vocab=30522, seq=128):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(BertLayer(hidden, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids):
        x = self.ln(self.word(input_ids) + self.position)
        for layer in self.layers:
            x = layer(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


class Gpt2Like(nn.Module):
    def __init__(self, layers, hidden, heads, vocab=50257, seq=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Parameter(torch.randn(1, seq, hidden) * 0.02)
        self.blocks = nn.ModuleList(Gpt2Block(hidden, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2
        # Additive causal mask: 0 on and below the diagonal, -inf above it.
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, input_ids):
        x = self.wte(input_ids) + self.wpe
        for block in self.blocks:
            x = block(x, self.mask)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------------
# Recurrent models
# --------------------------------------------------------------------------

class Recurrent(nn.Module):
    def __init__(self, cell, bidirectional=False, inputs=64, hidden=128):
        super().__init__()
        self.rnn = cell(inputs, hidden, num_layers=2, batch_first=True,
                        bidirectional=bidirectional)
        self.head = nn.Linear(hidden * (2 if bidirectional else 1), 10)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


class LstmSeq2Seq(nn.Module):
    def __init__(self, inputs=64, hidden=128, outputs=64):
        super().__init__()
        self.encoder = nn.LSTM(inputs, hidden, num_layers=2, batch_first=True)
        self.decoder = nn.LSTM(inputs, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, outputs)

    def forward(self, src, tgt):
        _, state = self.encoder(src)
        out, _ = self.decoder(tgt, state)
        return self.head(out)


# --------------------------------------------------------------------------
# Control flow (exported from TorchScript, so the branch / loop survives)
# --------------------------------------------------------------------------

class DataDependentIf(nn.Module):
    def __init__(self, features=64):
        super().__init__()
        self.pos = nn.Linear(features, features)
        self.neg = nn.Sequential(nn.Linear(features, features), nn.ReLU(),
                                 nn.Linear(features, features))

    def forward(self, x):
        if bool(x.sum() > 0):
            y = self.pos(x)
        else:
            y = self.neg(x)
        return torch.relu(y)


class FixedLoop(nn.Module):
    """A Loop between ordinary layers whose body reads `gate`, a value computed
    outside it: split tests see an outer value captured across devices."""

    def __init__(self, features=64):
        super().__init__()
        self.pre = nn.Linear(features, features)
        self.linear = nn.Linear(features, features)
        self.post = nn.Linear(features, features)

    def forward(self, x):
        gate = torch.sigmoid(self.pre(x))
        # A `for _ in range(4)` loop would be unrolled by the TorchScript passes the
        # exporter runs; a counted while-loop survives as an ONNX Loop (4 trips).
        i = 0
        while i < 4:
            x = x * 0.5 + self.linear(x) * gate
            i += 1
        return self.post(torch.relu(x))


def scripted(cls):
    def build():
        return torch.jit.script(cls().eval())
    return build


# --------------------------------------------------------------------------
# Registry: name -> (builder, input spec)
# --------------------------------------------------------------------------

REGISTRY = {
    "resnet18": (torchvision_cnn("resnet18"), image()),
    "resnet50": (torchvision_cnn("resnet50"), image()),
    "mobilenet_v2": (torchvision_cnn("mobilenet_v2"), image()),
    "squeezenet1_1": (torchvision_cnn("squeezenet1_1"), image()),
    "googlenet": (torchvision_cnn("googlenet", aux_logits=False, init_weights=True), image()),
    "inception_v3": (torchvision_cnn("inception_v3", aux_logits=False, init_weights=True),
                     image(299)),
    "vgg16": (torchvision_cnn("vgg16"), image()),
    "densenet121": (torchvision_cnn("densenet121"), image()),
    "transformer_encoder": (transformer_encoder, sequence(64, 256)),
    "transformer_seq2seq": (Seq2SeqTransformer,
                            sequence(32, 256, "src") + sequence(32, 256, "tgt")),
    # Dim 0 of every input and output is the symbolic "batch" (DYNAMIC_BATCH),
    # exported at batch 1; split tests plan them at one batch and run others.
    "resnet18_dynbatch": (torchvision_cnn("resnet18"), image()),
    "transformer_encoder_masked_dynbatch": (MaskedTransformerEncoder,
                                            sequence(64, 256, "src") + [("mask", (1, 64),
                                                                         torch.float32)]),
    "transformer_seq2seq_dynbatch": (Seq2SeqTransformer,
                                     sequence(32, 256, "src") + sequence(32, 256, "tgt")),
    "bert_base_like": (lambda: BertLike(12, 768, 12, 3072), tokens()),
    "bert_tiny_like": (lambda: BertLike(2, 128, 2, 512), tokens()),
    "gpt2_small_like": (lambda: Gpt2Like(12, 768, 12), tokens()),
    "gpt2_tiny_like": (lambda: Gpt2Like(2, 128, 2), tokens()),
    "lstm": (lambda: Recurrent(nn.LSTM), sequence(32, 64)),
    "lstm_bidirectional": (lambda: Recurrent(nn.LSTM, bidirectional=True), sequence(32, 64)),
    "lstm_seq2seq": (LstmSeq2Seq, sequence(32, 64, "src") + sequence(32, 64, "tgt")),
    "gru": (lambda: Recurrent(nn.GRU), sequence(32, 64)),
    "control_flow_if": (scripted(DataDependentIf), sequence(8, 64)),
    "control_flow_loop": (scripted(FixedLoop), sequence(8, 64)),
}

# Models exported with dim 0 of every input and output named "batch".
DYNAMIC_BATCH = {"resnet18_dynbatch", "transformer_encoder_masked_dynbatch",
                 "transformer_seq2seq_dynbatch"}

# Op types an exported graph must contain (checked after export).
REQUIRED_OPS = {
    "control_flow_if": "If",
    "control_flow_loop": "Loop",
    "bert_base_like": "Gather",
    "bert_tiny_like": "Gather",
    "gpt2_small_like": "Gather",
    "gpt2_tiny_like": "Gather",
    "lstm": "LSTM",
    "lstm_bidirectional": "LSTM",
    "lstm_seq2seq": "LSTM",
    "gru": "GRU",
}


# --------------------------------------------------------------------------
# Export and check
# --------------------------------------------------------------------------

def make_weights_distinct(model):
    """Jitters every float parameter or buffer that is constant or repeats an earlier one.

    torch.onnx 1.13 merges initializers with equal values and reads the copies
    through Identity nodes. Freshly initialised models are full of such tensors
    (LayerNorm / BatchNorm ones and zeros, zero biases, nn.TransformerEncoder's
    deep-copied layers); trained models are not, so neither should these be.
    """
    seen = set()
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if not t.is_floating_point() or t.numel() < 2:
                continue
            key = digest(t)
            if key in seen or bool((t == t.flatten()[0]).all()):
                t.add_(torch.randn_like(t) * 0.02)
                key = digest(t)
            seen.add(key)


def digest(t):
    return hashlib.sha1(t.detach().contiguous().numpy().tobytes()).digest()


def seed_for(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def export(name, path, opset, verbose):
    """Builds model `name` and writes it to `path`; returns its parameter count."""
    builder, spec = REGISTRY[name]
    torch.manual_seed(seed_for(name))
    model = builder().eval()
    make_weights_distinct(model)
    inputs = make_inputs(spec)
    params = sum(p.numel() for p in model.parameters())
    tmp = f"{path}.{os.getpid()}.tmp"  # private name: parallel runs may share OUT_DIR
    # Not under torch.no_grad(): with grad enabled, nn.TransformerEncoderLayer and
    # nn.MultiheadAttention skip their fused fast paths, which have no ONNX export.
    input_names = [n for n, _, _ in spec]
    dynamic = {}
    if name in DYNAMIC_BATCH:
        dynamic = {"output_names": ["output"],
                   "dynamic_axes": {n: {0: "batch"} for n in input_names + ["output"]}}
    with warnings.catch_warnings():
        if not verbose:
            warnings.simplefilter("ignore")
        torch.onnx.export(model, inputs, tmp, opset_version=opset,
                          do_constant_folding=True,
                          input_names=input_names,
                          verbose=False, **dynamic)
    os.replace(tmp, path)
    return params


def walk_nodes(graph):
    """Yields every node of `graph` and of the subgraphs (If / Loop bodies) below it."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            subgraphs = list(attr.graphs)
            if attr.type == onnx.AttributeProto.GRAPH:
                subgraphs.append(attr.g)
            for g in subgraphs:
                yield from walk_nodes(g)


def check(name, path):
    """Runs the ONNX checker and shape inference; returns (top nodes, all nodes)."""
    onnx.checker.check_model(path)
    model = onnx.load(path)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    required = REQUIRED_OPS.get(name)
    all_nodes = list(walk_nodes(model.graph))
    if required and required not in {n.op_type for n in all_nodes}:
        raise RuntimeError(f"exported graph has no {required} node")
    return len(model.graph.node), len(all_nodes)


def up_to_date(path):
    return os.path.exists(path) and os.path.getmtime(path) > SCRIPT_MTIME


def run_one(name, out_dir, opset, force, verbose):
    """Exports and checks one model; returns True on success."""
    path = os.path.join(out_dir, name + ".onnx")
    if not force and up_to_date(path):
        print(f"{name:22s} up to date, skipped", flush=True)
        return True
    start = time.time()
    try:
        params = export(name, path, opset, verbose)  # writes via a temp file
        export_s = time.time() - start
        start = time.time()
        nodes, nodes_all = check(name, path)
        check_s = time.time() - start
    except Exception as e:  # one clear line, then carry on with the other models
        for p in (path, f"{path}.{os.getpid()}.tmp"):
            if os.path.exists(p):
                os.remove(p)
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"FAILED {name}: {type(e).__name__}: {reason}", flush=True)
        return False
    sub = f" ({nodes_all} with subgraphs)" if nodes_all != nodes else ""
    print(f"{name:22s} nodes={nodes}{sub} params={params:,} "
          f"export_s={export_s:.1f} check_s={check_s:.1f}", flush=True)
    return True


def parse_models(text):
    if text == "small":
        return list(SMALL_SET)
    if text == "all":
        return list(REGISTRY)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in REGISTRY]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown model(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--models", type=parse_models, default=list(SMALL_SET),
                        help="comma-separated names, 'small' (default) or 'all'")
    parser.add_argument("--opset", type=int, default=13)
    parser.add_argument("--force", action="store_true", help="re-export up-to-date files")
    parser.add_argument("--verbose", action="store_true", help="show exporter warnings")
    args = parser.parse_args()

    torch.set_num_threads(2)
    os.makedirs(args.out_dir, exist_ok=True)
    start = time.time()
    failed = [n for n in args.models
              if not run_one(n, args.out_dir, args.opset, args.force, args.verbose)]
    print(f"{len(args.models) - len(failed)}/{len(args.models)} models ok "
          f"in {time.time() - start:.1f}s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
