"""Finite-difference cases: reductions, the softmax family, normalisations."""
import numpy as np

from rule_case import FLOAT32, Case, node, rand

CASES = [
    ("reducesum_axes_input", lambda rng: Case(
        [node("ReduceSum", ["a", "axes"], ["y"], keepdims=0)], "y", [2, 4],
        {"a": rand(rng, 2, 3, 4)}, constants={"axes": np.array([1], dtype=np.int64)})),
    ("reducesum_opset11_keepdims", lambda rng: Case(
        [node("ReduceSum", ["a"], ["y"], axes=[0, 2], keepdims=1)], "y", [1, 3, 1],
        {"a": rand(rng, 2, 3, 4)}, opset=11)),
    ("reducemean_all", lambda rng: Case(
        [node("ReduceMean", ["a"], ["y"], keepdims=1)], "y", [1, 1], {"a": rand(rng, 3, 4)})),
    ("reducemean_last", lambda rng: Case(
        [node("ReduceMean", ["a"], ["y"], axes=[-1], keepdims=0)], "y", [2, 3], {"a": rand(rng, 2, 3, 4)})),
]

CASES += [
    # Softmax/LogSoftmax: before opset 13 the tail from `axis` is one row
    # (default axis 1); from 13, one axis (default −1).
    ("softmax_opset11_coerced", lambda rng: Case(
        [node("Softmax", ["a"], ["y"])], "y", [2, 3, 4], {"a": rand(rng, 2, 3, 4, low=-2, high=2)},
        opset=11)),
    ("softmax_opset11_axis2", lambda rng: Case(
        [node("Softmax", ["a"], ["y"], axis=2)], "y", [2, 3, 2, 3], {"a": rand(rng, 2, 3, 2, 3)},
        opset=11)),
    ("softmax_opset13_default", lambda rng: Case(
        [node("Softmax", ["a"], ["y"])], "y", [2, 3, 4], {"a": rand(rng, 2, 3, 4, low=-2, high=2)},
        opset=13)),
    ("softmax_opset13_axis_neg2", lambda rng: Case(
        [node("Softmax", ["a"], ["y"], axis=-2)], "y", [2, 3, 4], {"a": rand(rng, 2, 3, 4)}, opset=13)),
    ("logsoftmax_opset11_coerced", lambda rng: Case(
        [node("LogSoftmax", ["a"], ["y"], axis=1)], "y", [2, 3, 4], {"a": rand(rng, 2, 3, 4)}, opset=11)),
    ("logsoftmax_opset13_axis1", lambda rng: Case(
        [node("LogSoftmax", ["a"], ["y"], axis=1)], "y", [2, 3, 4], {"a": rand(rng, 2, 3, 4)}, opset=13)),
    # LayerNormalization (opset 17): last axis with scale and bias; two
    # normalised axes without bias; the Mean and InvStdDev outputs used (in
    # float32: they have the stash type, float32).
    ("layernorm_last_axis", lambda rng: Case(
        [node("LayerNormalization", ["a", "s", "b"], ["y"], epsilon=1e-3)], "y", [2, 3, 5],
        {"a": rand(rng, 2, 3, 5, low=-2, high=2), "s": rand(rng, 5), "b": rand(rng, 5)})),
    ("layernorm_two_axes_no_bias", lambda rng: Case(
        [node("LayerNormalization", ["a", "s"], ["y"], axis=1)], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "s": rand(rng, 3, 4)})),
    ("layernorm_mean_invstd_outputs", lambda rng: Case(
        [node("LayerNormalization", ["a", "s", "b"], ["n", "mu", "rs"], axis=-2),
         node("Mul", ["mu", "rs"], ["m"]), node("Add", ["n", "m"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 2, 3, 4), "s": rand(rng, 4), "b": rand(rng, 3, 4)}, dtype=FLOAT32)),
]
