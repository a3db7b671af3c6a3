"""Finite-difference cases: element-wise arithmetic, math and activations."""
from rule_case import Case, node, rand, away_from

CASES = [
    ("add_broadcast", lambda rng: Case(
        [node("Add", ["a", "b"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "b": rand(rng, 3, 1)})),
    ("sub_broadcast", lambda rng: Case(
        [node("Sub", ["a", "b"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 1, 3, 4), "b": rand(rng, 2, 1, 4)})),
    ("mul_broadcast", lambda rng: Case(
        [node("Mul", ["a", "b"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "b": rand(rng, 4)})),
    ("div_broadcast", lambda rng: Case(
        [node("Div", ["a", "b"], ["y"])], "y", [3, 4],
        {"a": rand(rng, 3, 4), "b": rand(rng, 1, 4, low=0.5, high=2.0)})),
    ("mul_same_operand", lambda rng: Case(
        [node("Mul", ["a", "a"], ["y"])], "y", [3, 2], {"a": rand(rng, 3, 2)})),
    ("neg", lambda rng: Case([node("Neg", ["a"], ["y"])], "y", [5], {"a": rand(rng, 5)})),
    ("identity", lambda rng: Case([node("Identity", ["a"], ["y"])], "y", [5], {"a": rand(rng, 5)})),
    ("relu", lambda rng: Case([node("Relu", ["a"], ["y"])], "y", [4, 5],
                              {"a": away_from(rng, [4, 5], [0.0])})),
    ("sigmoid", lambda rng: Case([node("Sigmoid", ["a"], ["y"])], "y", [4, 5],
                                 {"a": rand(rng, 4, 5, low=-3, high=3)})),
    ("tanh", lambda rng: Case([node("Tanh", ["a"], ["y"])], "y", [4, 5],
                              {"a": rand(rng, 4, 5, low=-2, high=2)})),
    ("exp", lambda rng: Case([node("Exp", ["a"], ["y"])], "y", [6], {"a": rand(rng, 6)})),
]

import numpy as np  # noqa: E402
import onnx  # noqa: E402

from rule_case import FLOAT32, NewOpsetCase  # noqa: E402


def scalar(value):
    return np.array(value)


# ORT's CPU kernels of Elu, Erf, Softplus, HardSigmoid, HardSwish, Gelu, Mean
# and Clip before opset 12 are float32 only: those cases run in float32.
CASES += [
    # Clip: bounds as trained scalar inputs (opset 11+), one bound omitted,
    # and the opset-6 attribute form. Values stay away from the kinks.
    ("clip_opset13_bounds_trained", lambda rng: Case(
        [node("Clip", ["a", "lo", "hi"], ["y"])], "y", [4, 5],
        {"a": away_from(rng, [4, 5], [-0.4, 0.5]), "lo": scalar(-0.4), "hi": scalar(0.5)}, opset=13)),
    ("clip_opset11_max_only", lambda rng: Case(
        [node("Clip", ["a", "", "hi"], ["y"])], "y", [3, 4],
        {"a": away_from(rng, [3, 4], [0.2]), "hi": scalar(0.2)}, opset=11, dtype=FLOAT32)),
    ("clip_opset10_attrs", lambda rng: Case(
        [node("Clip", ["a"], ["y"], min=-0.3, max=0.6)], "y", [3, 4],
        {"a": away_from(rng, [3, 4], [-0.3, 0.6])}, opset=10, dtype=FLOAT32)),
    # Cast and CastLike: float32 through float64 and back; a cast to an
    # integer type passes no gradient (values stay away from integers).
    ("cast_float_double_float", lambda rng: Case(
        [node("Cast", ["a"], ["d"], to=onnx.TensorProto.DOUBLE), node("Mul", ["d", "d"], ["m"]),
         node("Cast", ["m"], ["y"], to=onnx.TensorProto.FLOAT)], "y", [3, 4],
        {"a": rand(rng, 3, 4)}, dtype=FLOAT32)),
    ("castlike_to_double", lambda rng: Case(
        [node("CastLike", ["a", "like"], ["d"]), node("Exp", ["d"], ["e"]),
         node("CastLike", ["e", "a"], ["y"])], "y", [5],
        {"a": rand(rng, 5)}, constants={"like": np.zeros([1], dtype=np.float64)}, dtype=FLOAT32,
        opset=15)),
    ("cast_to_int_no_gradient", lambda rng: Case(
        [node("Mul", ["a", "k"], ["s"]), node("Cast", ["s"], ["i"], to=onnx.TensorProto.INT64),
         node("Cast", ["i"], ["f"], to=onnx.TensorProto.DOUBLE), node("Add", ["a", "f"], ["y"])],
        "y", [6], {"a": rng.uniform(0.2, 0.8, [6])}, constants={"k": np.array(3.0)})),
    # Math.
    ("pow_broadcast_both", lambda rng: Case(
        [node("Pow", ["a", "b"], ["y"])], "y", [3, 4],
        {"a": rand(rng, 3, 4, low=0.5, high=2.0), "b": rand(rng, 4, low=-1.5, high=2.5)})),
    ("pow_int_exponent", lambda rng: Case(
        [node("Pow", ["a", "b"], ["y"])], "y", [3, 4], {"a": rand(rng, 3, 4)},
        constants={"b": np.array(3, dtype=np.int64)}, opset=13)),
    ("pow_constant_exponent", lambda rng: Case(
        [node("Constant", [], ["b"], value=onnx.numpy_helper.from_array(np.array(2.0), "b")),
         node("Pow", ["a", "b"], ["y"])], "y", [2, 5], {"a": rand(rng, 2, 5)}, opset=13)),
    ("sqrt", lambda rng: Case([node("Sqrt", ["a"], ["y"])], "y", [4, 3],
                              {"a": rand(rng, 4, 3, low=0.3, high=2.0)})),
    ("log", lambda rng: Case([node("Log", ["a"], ["y"])], "y", [4, 3],
                             {"a": rand(rng, 4, 3, low=0.3, high=2.0)})),
    ("reciprocal", lambda rng: Case([node("Reciprocal", ["a"], ["y"])], "y", [4, 3],
                                    {"a": away_from(rng, [4, 3], [0.0], margin=0.3)})),
    ("abs", lambda rng: Case([node("Abs", ["a"], ["y"])], "y", [4, 3],
                             {"a": away_from(rng, [4, 3], [0.0])})),
    # Activations.
    ("leakyrelu_alpha", lambda rng: Case([node("LeakyRelu", ["a"], ["y"], alpha=0.1)], "y", [4, 5],
                                         {"a": away_from(rng, [4, 5], [0.0])})),
    ("leakyrelu_default", lambda rng: Case([node("LeakyRelu", ["a"], ["y"])], "y", [6],
                                           {"a": away_from(rng, [6], [0.0])})),
    ("elu_alpha", lambda rng: Case([node("Elu", ["a"], ["y"], alpha=0.7)], "y", [4, 5],
                                   {"a": away_from(rng, [4, 5], [0.0], low=-2, high=2)}, dtype=FLOAT32)),
    ("erf", lambda rng: Case([node("Erf", ["a"], ["y"])], "y", [4, 5],
                             {"a": rand(rng, 4, 5, low=-2, high=2)}, dtype=FLOAT32)),
    ("softplus", lambda rng: Case([node("Softplus", ["a"], ["y"])], "y", [4, 5],
                                  {"a": rand(rng, 4, 5, low=-3, high=3)}, dtype=FLOAT32)),
    ("hardsigmoid_params", lambda rng: Case(
        [node("HardSigmoid", ["a"], ["y"], alpha=0.3, beta=0.4)], "y", [4, 5],
        {"a": away_from(rng, [4, 5], [-4 / 3, 2.0], low=-3, high=3)}, dtype=FLOAT32)),
    ("hardswish", lambda rng: Case(
        [node("HardSwish", ["a"], ["y"])], "y", [4, 5],
        {"a": away_from(rng, [4, 5], [-3.0, 3.0], low=-5, high=5)}, opset=14, dtype=FLOAT32)),
    ("gelu_opset20_exact", lambda rng: NewOpsetCase(
        [node("Gelu", ["a"], ["y"])], "y", [4, 5], {"a": rand(rng, 4, 5, low=-3, high=3)}, opset=20, dtype=FLOAT32)),
    ("gelu_opset20_tanh", lambda rng: NewOpsetCase(
        [node("Gelu", ["a"], ["y"], approximate="tanh")], "y", [4, 5],
        {"a": rand(rng, 4, 5, low=-3, high=3)}, opset=20, dtype=FLOAT32)),
    # Variadic Sum/Mean/Max/Min with broadcasting (no ties in random data).
    ("sum_variadic_broadcast", lambda rng: Case(
        [node("Sum", ["a", "b", "c"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "b": rand(rng, 3, 1), "c": rand(rng, 4)})),
    ("mean_variadic_broadcast", lambda rng: Case(
        [node("Mean", ["a", "b", "c"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 1, 3, 4), "b": rand(rng, 2, 1, 1), "c": rand(rng, 3, 4)}, dtype=FLOAT32)),
    ("max_variadic_broadcast", lambda rng: Case(
        [node("Max", ["a", "b", "c"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "b": rand(rng, 3, 1), "c": rand(rng, 4)})),
    ("min_two_broadcast", lambda rng: Case(
        [node("Min", ["a", "b"], ["y"])], "y", [3, 4],
        {"a": rand(rng, 3, 4), "b": rand(rng, 4)})),
    ("max_single", lambda rng: Case([node("Max", ["a"], ["y"])], "y", [5], {"a": rand(rng, 5)})),
    # Dropout in inference form: version 7 (no mask output; at opset 8, as
    # the FD loss's ReduceSum gradient needs Expand) and opset 13 with a
    # ratio and no training_mode.
    ("dropout_opset8_v7", lambda rng: Case(
        [node("Dropout", ["a"], ["y"], ratio=0.3)], "y", [3, 4], {"a": rand(rng, 3, 4)}, opset=8)),
    ("dropout_opset13_ratio", lambda rng: Case(
        [node("Dropout", ["a", "r"], ["y"])], "y", [3, 4], {"a": rand(rng, 3, 4)},
        constants={"r": np.array(0.5, dtype=np.float32)}, opset=13)),
]
