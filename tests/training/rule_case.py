"""One finite-difference case of a gradient rule (see make_rule_cases.py)."""
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Operators ONNX Runtime's CPU provider runs in float64; other cases run in
# float32 with a coarser step and tolerance.
FLOAT64 = np.float64
FLOAT32 = np.float32


def seed_of(name):
    return zlib.crc32(name.encode())


def file_name(weight_name):
    """A file name for a weight (names may hold '/' or ':')."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in weight_name)


class Case:
    """nodes: onnx NodeProtos computing `y_name` from `weights` (float
    initializers, trained), `constants` (other initializers: indices, shapes;
    not trained) and `inputs` (graph inputs with fixed values, not trained)."""

    def __init__(self, nodes, y_name, y_shape, weights, constants=None, opset=17,
                 dtype=FLOAT64, tolerance=None):
        self.nodes = nodes
        self.y_name = y_name
        self.y_shape = list(y_shape)
        self.weights = {k: np.asarray(v, dtype=dtype) for k, v in weights.items()}
        self.constants = constants or {}
        self.opset = opset
        self.dtype = dtype
        self.tolerance = tolerance or (1e-6 if dtype == FLOAT64 else 2e-2)

    def model(self, name):
        elem = TensorProto.DOUBLE if self.dtype == FLOAT64 else TensorProto.FLOAT
        rng = np.random.default_rng(seed_of(name) + 1)
        r = rng.uniform(0.5, 1.5, self.y_shape).astype(self.dtype)
        r *= np.where(rng.random(self.y_shape) < 0.5, -1, 1).astype(self.dtype)
        nodes = list(self.nodes) + [
            helper.make_node("Constant", [], ["fd_r"], value=numpy_helper.from_array(r, "fd_r")),
            helper.make_node("Mul", [self.y_name, "fd_r"], ["fd_weighted"]),
            helper.make_node("ReduceSum", ["fd_weighted"], ["loss"], keepdims=0)
            if self.opset < 13 else
            helper.make_node("ReduceSum", ["fd_weighted", "fd_all_axes"], ["loss"], keepdims=0),
        ]
        initializers = [numpy_helper.from_array(v, k) for k, v in self.weights.items()]
        initializers += [numpy_helper.from_array(np.asarray(v), k) for k, v in self.constants.items()]
        if self.opset >= 13:
            initializers.append(numpy_helper.from_array(
                np.arange(len(self.y_shape), dtype=np.int64), "fd_all_axes"))
        graph = helper.make_graph(nodes, name, [], [helper.make_tensor_value_info("loss", elem, [])],
                                  initializer=initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model

    def meta(self, name):
        return {"name": name, "dtype": "float64" if self.dtype == FLOAT64 else "float32",
                "tolerance": self.tolerance, "opset": self.opset,
                "weights": {k: file_name(k) + ".pb" for k in self.weights}}


class NewOpsetCase(Case):
    """A case at an opset newer than Debian's onnx (1.12, opset 17) knows:
    its checker is skipped (ONNX Runtime checks the model itself)."""

    def model(self, name):
        check = onnx.checker.check_model
        onnx.checker.check_model = lambda model: None
        try:
            model = super().model(name)
        finally:
            onnx.checker.check_model = check
        model.ir_version = 9
        return model


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


def rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape)


def away_from(rng, shape, points, margin=0.1, low=-1.0, high=1.0):
    """Random values at least `margin` from each of `points` (kinks of Relu,
    Abs, Clip...), where central differences are exact."""
    x = rng.uniform(low, high, shape)
    for p in points:
        near = np.abs(x - p) < margin
        x = np.where(near, p + np.sign(x - p + 1e-12) * margin * 2, x)
    return x
