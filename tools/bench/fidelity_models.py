#!/usr/bin/python3
"""Exports the models of the plan fidelity benchmark (scripts/bench_plan_fidelity.sh).

Six architectures of different shapes, each file ONE micro-batch (the runner
and `onnx-autopar --microbatches M` push M of them through a step), sized so
one micro-batch takes about 3-10 ms on one core of a 2020s x86 CPU and the
whole benchmark fits in 15 minutes on 2 cores:

  cnn_b8        ResNet-style CNN, batch 8 of 3x32x32 images
  inception     Inception-style blocks (four parallel branches each), one 3x96x96 image
  bert_like     BERT-like encoder: 4 post-LN layers, hidden 256, 64 tokens
  gpt2_like     GPT-2-like decoder: 4 pre-LN causal blocks, hidden 256, 64 tokens, tied LM head
  seq2seq       nn.Transformer encoder-decoder, 2 + 2 layers, d_model 256
  lstm          2-layer LSTM, hidden 256, batch 4 x 32 steps, linear head

Usage:
    /usr/bin/python3 tools/bench/fidelity_models.py OUT_DIR [--models a,b,...] [--force]

Weights are random and seeded (tools/export_models.py's helpers), so the same
files come out on every run; an existing file newer than this script is kept
unless --force. Requires Debian's /usr/bin/python3 (torch, onnx).
"""

import argparse
import os
import sys
import time
import warnings

import onnx
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import export_models as em  # noqa: E402  (tools/export_models.py)

SCRIPT_MTIME = max(os.path.getmtime(os.path.abspath(__file__)), os.path.getmtime(em.__file__))


def conv_bn(cin, cout, k=3, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.skip = (nn.Identity() if stride == 1 and cin == cout
                     else nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)))

    def forward(self, x):
        return torch.relu(self.b(self.a(x)) + self.skip(x))


class SmallResNet(nn.Module):
    def __init__(self, widths=(16, 32, 64), classes=10):
        super().__init__()
        layers = [conv_bn(3, widths[0])]
        cin = widths[0]
        for i, w in enumerate(widths):
            layers += [Residual(cin, w, 1 if i == 0 else 2), Residual(w, w, 1)]
            cin = w
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=(2, 3)))


class InceptionBlock(nn.Module):
    def __init__(self, cin, b1, b3, b5, bp):
        super().__init__()
        self.b1 = conv_bn(cin, b1, 1)
        self.b3 = nn.Sequential(conv_bn(cin, b3 // 2, 1), conv_bn(b3 // 2, b3, 3))
        self.b5 = nn.Sequential(conv_bn(cin, b5 // 2, 1), conv_bn(b5 // 2, b5, 5))
        self.bp = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_bn(cin, bp, 1))

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x), self.b5(x), self.bp(x)], dim=1)


class SmallInception(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 32, 3, 2), conv_bn(32, 48, 3))
        self.blocks = nn.Sequential(
            InceptionBlock(48, 32, 48, 16, 16),     # -> 112
            InceptionBlock(112, 48, 64, 24, 24),    # -> 160
            nn.MaxPool2d(3, 2, 1),
            InceptionBlock(160, 64, 96, 32, 32),    # -> 224
            InceptionBlock(224, 64, 96, 32, 32),    # -> 224
        )
        self.fc = nn.Linear(224, classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))


def images(batch, size):
    return [("input", (batch, 3, size, size), torch.float32)]


# name -> (builder, input spec); every spec is one micro-batch.
MODELS = {
    "cnn_b8": (lambda: SmallResNet((24, 48, 96)), images(8, 32)),
    "inception": (SmallInception, images(1, 96)),
    "bert_like": (lambda: em.BertLike(4, 256, 4, 1024, vocab=8000, seq=64), em.tokens(64)),
    "gpt2_like": (lambda: em.Gpt2Like(4, 256, 4, vocab=4000, seq=64), em.tokens(64)),
    "seq2seq": (lambda: em.Seq2SeqTransformer(d_model=256, seq=32),
                em.sequence(32, 256, "src") + em.sequence(32, 256, "tgt")),
    "lstm": (lambda: em.Recurrent(nn.LSTM, inputs=64, hidden=256),
             [("input", (4, 32, 64), torch.float32)]),
}


def export(name, path):
    builder, spec = MODELS[name]
    torch.manual_seed(em.seed_for(name))
    model = builder().eval()
    em.make_weights_distinct(model)
    inputs = em.make_inputs(spec)
    tmp = f"{path}.{os.getpid()}.tmp"
    # Not under torch.no_grad(), as in export_models.py: nn.Transformer's fused
    # fast paths, taken without grad, have no ONNX export.
    torch.onnx.export(model, inputs, tmp, opset_version=13, do_constant_folding=True,
                      input_names=[n for n, _, _ in spec], verbose=False)
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"fidelity_models: unknown model {', '.join(unknown)} (known: {', '.join(MODELS)})", file=sys.stderr)
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    warnings.simplefilter("ignore")  # the exporter's tracer warnings
    for name in names:
        path = os.path.join(args.out_dir, f"{name}.onnx")
        if not args.force and os.path.exists(path) and os.path.getmtime(path) > SCRIPT_MTIME:
            continue
        t0 = time.time()
        export(name, path)
        print(f"{name}: {path} ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
