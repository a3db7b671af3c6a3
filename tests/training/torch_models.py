"""PyTorch models, their ONNX exports, data and torch's own trained weights,
for the end-to-end training test (torch_parity.test.mjs).

    /usr/bin/python3 tests/training/torch_models.py OUT_DIR [NAME ...]

writes, for each model NAME (all when none is named):
  OUT_DIR/NAME/model.onnx      the export; its float initializers are torch's
                               parameters under their own names
  OUT_DIR/NAME/case.json       loss, freeze pattern, runs (optimizer, steps,
                               micro-batches) and, per run, where torch's
                               trained weights and losses are
  OUT_DIR/NAME/data/step_<s>/mb_<m>/<input>.pb   the data, labels included
  OUT_DIR/NAME/<run>/<k>.pb    torch's weights after the run (TensorProtos
                               named after the initializer)

Each model runs in eval() (BatchNorm uses its running statistics, set from 4
random batches first; Dropout is off) and each run trains from the same
initial weights: a step
accumulates `(loss / M).backward()` over M micro-batches and calls
`optimizer.step()` once.

Why the export is done in training mode: torch.onnx in eval mode folds every
BatchNormalization into the Conv before it (the weights become new tensors
with new names) and, with constant folding, replaces transposed or reordered
weights (Linear on 3-D inputs, LSTM/GRU gate order) by new initializers. In
training mode (constant folding off) every parameter stays one initializer
under its own name, tied weights included; the BatchNormalization nodes are
then rewritten to their inference form and the Dropout nodes to Identity,
which is what eval() computes.
"""
import copy
import json
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from onnx import numpy_helper

BATCH = 2
MICROBATCHES = 2
SGD = {"optimizer": "sgd", "lr": 0.1, "steps": 1}
# Adam's eps is 1e-3, not torch's 1e-8: Adam divides a gradient by its own
# size, so where the exact gradient is zero (the key bias of attention:
# softmax does not see a shift of all its inputs) the float32 rounding noise
# of either implementation (~1e-8) becomes a step of up to lr whose sign is
# the noise's, and no two float32 implementations agree on it. With eps 1e-3
# noise of 1e-8 moves a weight by ~lr·1e-5. lr is 1e-4, a tenth of torch's
# default: at 1e-3 one step on every weight of ResNet-18 (BatchNorm frozen)
# lifts its loss from 2.7 to 13.8 and a ReLU6 mask of MobileNetV2 flips on
# float32 noise (weights 5.6e-6 apart), so two correct float32 steps part by
# more than the tolerance; at 1e-4 both agree within 3e-7. The learnable task
# (blobs) trains with eps 1e-8.
ADAM = {"optimizer": "adam", "lr": 0.0001, "betas": [0.9, 0.999], "eps": 1e-3, "steps": 3}


class Mlp(nn.Module):
    def __init__(self, features=8, hidden=16, classes=4):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.out(torch.tanh(self.fc2(F.relu(self.fc1(x)))))


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class Cnn(nn.Module):
    """Conv-BN-ReLU, max pooling, two residual blocks, average pooling, a
    strided grouped conv and a linear head."""

    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.block1 = ResidualBlock(8)
        self.block2 = ResidualBlock(8)
        self.down = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
        self.head = nn.Linear(8 * 2 * 2, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.stem(x))), 2)
        x = self.block2(self.block1(x))
        x = F.avg_pool2d(x, 2)
        x = F.relu(self.down(x))
        return self.head(torch.flatten(x, 1))


class TransformerClassifier(nn.Module):
    def __init__(self, d_model=16, classes=3):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0,
                                                activation="gelu", batch_first=True)
        self.head = nn.Linear(d_model, classes)

    def forward(self, x):
        return self.head(self.layer(x).mean(dim=1))


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, heads, length):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        # A bool buffer: not a float initializer, so nobody trains it.
        self.register_buffer("causal", torch.tril(torch.ones(length, length, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        shape = (b, t, self.heads, c // self.heads)
        q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
        y = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class Gpt2Block(nn.Module):
    """Token and position embeddings, one pre-LN decoder block with causal
    self-attention and a tanh-GELU MLP, and an LM head tied to the token
    embedding. Logits are [batch, vocab, time], as CrossEntropyLoss wants."""

    def __init__(self, vocab=11, d_model=16, heads=2, length=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Embedding(length, d_model)
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, heads, length)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_proj = nn.Linear(4 * d_model, d_model)
        self.ln_f = nn.LayerNorm(d_model)
        self.register_buffer("positions", torch.arange(length))

    def forward(self, tokens):
        x = self.wte(tokens) + self.wpe(self.positions[: tokens.shape[1]])
        x = x + self.attn(self.ln1(x))
        x = x + self.fc_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        logits = self.ln_f(x) @ self.wte.weight.t()
        return logits.transpose(1, 2)


class LstmClassifier(nn.Module):
    def __init__(self, features=4, hidden=8, classes=3):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])


class GruSeq2Seq(nn.Module):
    """A GRU encoder over float source features; a GRU decoder started from
    its last state reads the (teacher-forced) target tokens."""

    def __init__(self, features=4, hidden=8, vocab=7):
        super().__init__()
        self.encoder = nn.GRU(features, hidden, batch_first=True)
        self.embed = nn.Embedding(vocab, hidden)
        self.decoder = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, source, target_in):
        _, h = self.encoder(source)
        y, _ = self.decoder(self.embed(target_in), h)
        return self.out(y).transpose(1, 2)


def float_input(name, *shape):
    return {"name": name, "shape": list(shape), "kind": "float"}


def token_input(name, high, *shape):
    return {"name": name, "shape": list(shape), "kind": "tokens", "high": high}


def resnet18():
    return torchvision.models.resnet18(num_classes=10)


def mobilenet_v2():
    return torchvision.models.mobilenet_v2(num_classes=10, width_mult=0.25)


def model_specs(batch):
    """name: (constructor, inputs, labels shape, classes, opset) for micro-batches of `batch`."""
    b = batch
    return {
        "mlp": (Mlp, [float_input("x", b, 8)], [b], 4, 13),
        "cnn": (Cnn, [float_input("x", b, 3, 16, 16)], [b], 5, 13),
        "resnet18": (resnet18, [float_input("x", b, 3, 32, 32)], [b], 10, 13),
        "mobilenet_v2": (mobilenet_v2, [float_input("x", b, 3, 32, 32)], [b], 10, 13),
        "transformer": (TransformerClassifier, [float_input("x", b, 5, 16)], [b], 3, 17),
        "gpt2_block": (Gpt2Block, [token_input("tokens", 11, b, 6)], [b, 6], 11, 13),
        "lstm": (LstmClassifier, [float_input("x", b, 5, 4)], [b], 3, 13),
        "gru_seq2seq": (GruSeq2Seq, [float_input("source", b, 5, 4), token_input("target_in", 7, b, 4)],
                        [b, 4], 7, 13),
    }


MODELS = model_specs(BATCH)


def random_inputs(rng, inputs):
    return [torch.from_numpy(rng.uniform(-1, 1, s["shape"]).astype(np.float32)) if s["kind"] == "float"
            else torch.from_numpy(rng.integers(0, s["high"], s["shape"], dtype=np.int64)) for s in inputs]


def make_model(make, inputs, seed):
    """A fresh model in eval(), its BatchNorm statistics those of 4 random
    batches (as a trained model's are: with torch's initial mean 0 and
    variance 1, MobileNetV2's activations shrink ~10x a block and its
    gradients vanish)."""
    torch.manual_seed(seed)
    model = make()
    if any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.momentum = None  # a cumulative average
        model.train()
        rng = np.random.default_rng(seed + 100)
        with torch.no_grad():
            for _ in range(4):
                model(*random_inputs(rng, inputs))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.momentum = 0.1
    model.eval()
    return model


def make_data(rng, inputs, labels_shape, classes, steps, microbatches):
    """[step][microbatch] -> {name: numpy array}, labels included."""
    data = []
    for _ in range(steps):
        step = []
        for _ in range(microbatches):
            mb = {}
            for spec in inputs:
                if spec["kind"] == "float":
                    mb[spec["name"]] = rng.uniform(-1, 1, spec["shape"]).astype(np.float32)
                else:
                    mb[spec["name"]] = rng.integers(0, spec["high"], spec["shape"], dtype=np.int64)
            mb["labels"] = rng.integers(0, classes, labels_shape, dtype=np.int64)
            step.append(mb)
        data.append(step)
    return data


def write_data(directory, data):
    for s, step in enumerate(data):
        for m, mb in enumerate(step):
            d = os.path.join(directory, f"step_{s}", f"mb_{m}")
            os.makedirs(d, exist_ok=True)
            for name, value in mb.items():
                with open(os.path.join(d, f"{name}.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(value, name).SerializeToString())


def remove_dead_nodes(graph):
    outputs = {o.name for o in graph.output}
    while True:
        used = set(outputs)
        for n in graph.node:
            used.update(n.input)
        dead = [n for n in graph.node if not any(o in used for o in n.output if o)]
        if not dead:
            return
        for n in dead:
            graph.node.remove(n)


def to_inference_form(model):
    """BatchNormalization with its running statistics (one output, no
    training_mode) and Dropout as Identity: what eval() computes."""
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            del node.output[1:]
            kept = [a for a in node.attribute if a.name != "training_mode"]
            del node.attribute[:]
            node.attribute.extend(kept)
        elif node.op_type == "Dropout":
            node.op_type = "Identity"
            del node.input[1:]
            del node.output[1:]
            del node.attribute[:]
    remove_dead_nodes(model.graph)
    used = {i for n in model.graph.node for i in n.input}
    kept = [t for t in model.graph.initializer if t.name in used]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)


def export(model, inputs, opset, path):
    """Exports a copy of `model` (tracing in training mode updates BatchNorm's
    running statistics) and writes `model`'s own values into the initializers."""
    example = tuple(torch.zeros(s["shape"], dtype=torch.float32 if s["kind"] == "float" else torch.int64)
                    for s in inputs)
    torch.onnx.export(copy.deepcopy(model), example, path, input_names=[s["name"] for s in inputs],
                      output_names=["logits"], opset_version=opset,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)
    proto = onnx.load(path)
    to_inference_form(proto)
    state = model.state_dict()
    for t in proto.graph.initializer:
        if t.name in state:
            t.CopyFrom(numpy_helper.from_array(state[t.name].detach().numpy(), t.name))
    onnx.checker.check_model(proto)
    onnx.save(proto, path)
    return proto


def make_optimizer(run, params):
    if run["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=run["lr"])
    return torch.optim.Adam(params, lr=run["lr"], betas=tuple(run["betas"]), eps=run["eps"])


def train(model, run, data, microbatches):
    """Trains `model` in place as train.mjs does; returns the loss per step
    (the mean over the micro-batches, before the update)."""
    model.eval()
    opt = make_optimizer(run, [p for p in model.parameters() if p.requires_grad])
    criterion = nn.CrossEntropyLoss()
    losses = []
    for step in data[: run["steps"]]:
        opt.zero_grad()
        total = 0.0
        for mb in step[:microbatches]:
            feeds = [torch.from_numpy(v) for k, v in mb.items() if k != "labels"]
            loss = criterion(model(*feeds), torch.from_numpy(mb["labels"]))
            (loss / microbatches).backward()
            total += loss.item()
        opt.step()
        losses.append(total / microbatches)
    return losses


def write_case(out_dir, name, make, inputs, labels_shape, classes, opset, runs, microbatches=MICROBATCHES,
               seed=0):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    model = make_model(make, inputs, seed)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    proto = export(model, inputs, opset, os.path.join(d, "model.onnx"))

    # The export's float initializers: parameters (trained) or buffers (frozen).
    by_identity = {}
    for key, value in model.state_dict(keep_vars=True).items():
        by_identity.setdefault(id(value), key)
    params = {key: p for key, p in model.state_dict(keep_vars=True).items() if isinstance(p, nn.Parameter)}
    trained, frozen = [], []
    for t in proto.graph.initializer:
        if t.data_type != onnx.TensorProto.FLOAT:
            continue
        if t.name in params:
            trained.append(t.name)
        else:
            frozen.append(t.name)
    for key, p in params.items():
        if p.requires_grad and key not in trained and by_identity[id(p)] == key:
            raise SystemExit(f"{name}: parameter {key} is no initializer of the export")

    steps = max(r["steps"] for r in runs)
    data = make_data(np.random.default_rng(seed + 1), inputs, labels_shape, classes, steps, microbatches)
    write_data(os.path.join(d, "data"), data)
    case = {"name": name, "loss": "cross-entropy:logits", "classes": classes, "microbatches": microbatches,
            "frozen": frozen, "trained": trained, "runs": []}
    for run in runs:
        model.load_state_dict(initial)
        losses = train(model, run, data, microbatches)
        run_dir = os.path.join(d, run["name"])
        os.makedirs(run_dir, exist_ok=True)
        weights = {}
        state = model.state_dict()
        for k, key in enumerate(trained):
            weights[key] = f"{k}.pb"
            value = state[key].detach().numpy()
            with open(os.path.join(run_dir, f"{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, key).SerializeToString())
        case["runs"].append({**run, "dir": run["name"], "losses": losses, "weights": weights})
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(case, f, indent=1)


class Blobs(nn.Module):
    """The learnable task's model: a small MLP on four Gaussian blobs."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def write_learnable(out_dir, steps=50):
    """Four Gaussian blobs in 2-D, 50 Adam steps of 2 micro-batches of 8:
    the loss falls from ~1.4 well below 0.5, and train.mjs must follow it."""
    d = os.path.join(out_dir, "blobs")
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(0)
    model = Blobs()
    export(model, [float_input("x", 8, 2)], 13, os.path.join(d, "model.onnx"))
    rng = np.random.default_rng(7)
    centres = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=np.float32)
    data = []
    for _ in range(steps):
        step = []
        for _ in range(2):
            labels = rng.integers(0, 4, [8], dtype=np.int64)
            x = (centres[labels] + 0.3 * rng.standard_normal([8, 2])).astype(np.float32)
            step.append({"x": x, "labels": labels})
        data.append(step)
    write_data(os.path.join(d, "data"), data)
    run = {"name": "adam", "optimizer": "adam", "lr": 0.05, "betas": [0.9, 0.999], "eps": 1e-8, "steps": steps}
    losses = train(model, run, data, 2)
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump({"name": "blobs", "loss": "cross-entropy:logits", "microbatches": 2, "frozen": [],
                   "runs": [{**run, "losses": losses}]}, f, indent=1)


def main(argv):
    out_dir = argv[1]
    names = argv[2:] or [*MODELS, "blobs"]
    torch.set_num_threads(1)
    runs = [{"name": "sgd", **SGD}, {"name": "adam", **ADAM}]
    for name in names:
        if name == "blobs":
            write_learnable(out_dir)
            continue
        make, inputs, labels_shape, classes, opset = MODELS[name]
        write_case(out_dir, name, make, inputs, labels_shape, classes, opset, runs)


if __name__ == "__main__":
    main(sys.argv)
