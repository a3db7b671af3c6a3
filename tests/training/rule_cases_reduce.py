"""Finite-difference cases: reductions, the softmax family, normalisations."""
import numpy as np

from rule_case import Case, node, rand

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
