"""Finite-difference cases: products (MatMul, Gemm) and convolutions."""
from rule_case import Case, node, rand

CASES = [
    ("matmul_2d", lambda rng: Case(
        [node("MatMul", ["a", "b"], ["y"])], "y", [3, 5], {"a": rand(rng, 3, 4), "b": rand(rng, 4, 5)})),
    ("matmul_batched_broadcast", lambda rng: Case(
        [node("MatMul", ["a", "b"], ["y"])], "y", [2, 3, 3, 5],
        {"a": rand(rng, 2, 1, 3, 4), "b": rand(rng, 3, 4, 5)})),
    ("matmul_vector_left", lambda rng: Case(
        [node("MatMul", ["a", "b"], ["y"])], "y", [2, 5], {"a": rand(rng, 4), "b": rand(rng, 2, 4, 5)})),
    ("matmul_vector_right", lambda rng: Case(
        [node("MatMul", ["a", "b"], ["y"])], "y", [2, 3], {"a": rand(rng, 2, 3, 4), "b": rand(rng, 4)})),
    ("gemm_plain", lambda rng: Case(
        [node("Gemm", ["a", "b", "c"], ["y"])], "y", [3, 5],
        {"a": rand(rng, 3, 4), "b": rand(rng, 4, 5), "c": rand(rng, 5)})),
    ("gemm_transposed_scaled", lambda rng: Case(
        [node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.7, beta=1.3)], "y", [3, 5],
        {"a": rand(rng, 4, 3), "b": rand(rng, 5, 4), "c": rand(rng, 3, 1)})),
    ("gemm_trans_a", lambda rng: Case(
        [node("Gemm", ["a", "b"], ["y"], transA=1)], "y", [3, 5], {"a": rand(rng, 4, 3), "b": rand(rng, 4, 5)})),
    ("gemm_trans_b", lambda rng: Case(
        [node("Gemm", ["a", "b"], ["y"], transB=1)], "y", [3, 5], {"a": rand(rng, 3, 4), "b": rand(rng, 5, 4)})),
]
