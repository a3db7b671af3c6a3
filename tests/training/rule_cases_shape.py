"""Finite-difference cases: layout and data movement."""
import numpy as np

from rule_case import Case, node, rand

CASES = [
    ("reshape", lambda rng: Case(
        [node("Reshape", ["a", "shape"], ["y"])], "y", [4, 6], {"a": rand(rng, 2, 3, 4)},
        constants={"shape": np.array([4, 6], dtype=np.int64)})),
    ("flatten", lambda rng: Case(
        [node("Flatten", ["a"], ["y"], axis=2)], "y", [6, 4], {"a": rand(rng, 2, 3, 4)})),
    ("transpose", lambda rng: Case(
        [node("Transpose", ["a"], ["y"], perm=[2, 0, 1])], "y", [4, 2, 3], {"a": rand(rng, 2, 3, 4)})),
    ("transpose_default", lambda rng: Case(
        [node("Transpose", ["a"], ["y"])], "y", [4, 3, 2], {"a": rand(rng, 2, 3, 4)})),
]
