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
