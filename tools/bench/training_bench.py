"""Models, data and PyTorch's own step times for the training benchmark
(scripts/bench_training.sh, tools/bench/training_bench.mjs).

    /usr/bin/python3 tools/bench/training_bench.py OUT_DIR [--models a,b] [--batch 8]
                     [--steps 10] [--warmup 2]

For each model of tests/training/torch_models.py (the architectures the
PyTorch parity test trains, at micro-batch size --batch), writes
  OUT_DIR/NAME/model.onnx    its export (torch's parameters as initializers)
  OUT_DIR/NAME/data/step_<s>/mb_0/*.pb   warmup + steps micro-batches, labels included
  OUT_DIR/NAME/torch.json    {"step_ms": [...], "losses": [...], "params": N}
torch's step: zero_grad, forward, CrossEntropyLoss, backward and
torch.optim.Adam(lr 1e-4)'s step, in eval() (as the export), on one thread
(torch.set_num_threads(1)), timed with time.perf_counter; the first --warmup
steps are trained on but not reported.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "training"))
import torch_models  # noqa: E402  (the models the parity test checks)

# As the parity test (tests/training/torch_models.py): at 1e-3 ResNet-18's and
# MobileNetV2's losses part from torch's on float32 noise within 3 steps.
LEARNING_RATE = 1e-4


def bench(out_dir, name, spec, steps, warmup):
    make, inputs, labels_shape, classes, opset = spec
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    model = torch_models.make_model(make, inputs, 0)
    torch_models.export(model, inputs, opset, os.path.join(d, "model.onnx"))
    data = torch_models.make_data(np.random.default_rng(1), inputs, labels_shape, classes, warmup + steps, 1)
    torch_models.write_data(os.path.join(d, "data"), data)
    opt = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    criterion = nn.CrossEntropyLoss()
    step_ms, losses = [], []
    for s, step in enumerate(data):
        mb = step[0]
        feeds = [torch.from_numpy(v) for k, v in mb.items() if k != "labels"]
        labels = torch.from_numpy(mb["labels"])
        start = time.perf_counter()
        opt.zero_grad()
        loss = criterion(model(*feeds), labels)
        loss.backward()
        opt.step()
        elapsed = time.perf_counter() - start
        losses.append(loss.item())
        if s >= warmup:
            step_ms.append(elapsed * 1e3)
    params = sum(p.numel() for p in model.parameters())
    with open(os.path.join(d, "torch.json"), "w") as f:
        json.dump({"model": name, "batch": inputs[0]["shape"][0], "step_ms": step_ms, "losses": losses,
                   "warmup": warmup, "params": params, "threads": torch.get_num_threads(),
                   "learning_rate": LEARNING_RATE}, f, indent=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--models", default=",".join(torch_models.model_specs(1)))
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(1)
    specs = torch_models.model_specs(a.batch)
    for name in a.models.split(","):
        if name not in specs:
            raise SystemExit(f"training_bench.py: unknown model '{name}' (known: {', '.join(specs)})")
        bench(a.out_dir, name, specs[name], a.steps, a.warmup)
        print(f"training_bench.py: {name} exported and timed in torch", file=sys.stderr)


if __name__ == "__main__":
    main()
