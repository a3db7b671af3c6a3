"""Finite-difference cases: layout and data movement."""
import numpy as np

from rule_case import Case, NewOpsetCase, node, rand

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
    # Squeeze/Unsqueeze: axes as an attribute (opset 11) and as an input (13).
    ("squeeze_opset11_attr", lambda rng: Case(
        [node("Squeeze", ["a"], ["y"], axes=[0, -2])], "y", [3, 4], {"a": rand(rng, 1, 3, 1, 4)}, opset=11)),
    ("squeeze_opset13_input", lambda rng: Case(
        [node("Squeeze", ["a", "axes"], ["y"])], "y", [3, 4], {"a": rand(rng, 3, 1, 4)}, opset=13,
        constants={"axes": np.array([1], dtype=np.int64)})),
    ("unsqueeze_opset11_attr", lambda rng: Case(
        [node("Unsqueeze", ["a"], ["y"], axes=[0, 3])], "y", [1, 3, 4, 1], {"a": rand(rng, 3, 4)}, opset=11)),
    ("unsqueeze_opset13_input_negative", lambda rng: Case(
        [node("Unsqueeze", ["a", "axes"], ["y"])], "y", [3, 1, 4], {"a": rand(rng, 3, 4)}, opset=13,
        constants={"axes": np.array([-2], dtype=np.int64)})),
]

I64 = np.int64
INT64_MIN = np.iinfo(np.int64).min


def ints(*values):
    return np.array(values, dtype=I64)


CASES += [
    # Slice: the opset-9 attribute form, unit steps with axes, negative axes
    # with strides of both signs, and starts/ends past the ends.
    ("slice_opset9_attrs", lambda rng: Case(
        [node("Slice", ["a"], ["y"], starts=[1, 0], ends=[3, -1], axes=[0, 2])], "y", [2, 3, 3],
        {"a": rand(rng, 4, 3, 4)}, opset=9)),
    ("slice_unit_steps_no_axes", lambda rng: Case(
        [node("Slice", ["a", "starts", "ends"], ["y"])], "y", [2, 2, 4], {"a": rand(rng, 3, 4, 4)},
        constants={"starts": ints(1, -3), "ends": ints(100, 3)}, opset=13)),
    ("slice_negative_axes_strided", lambda rng: Case(
        [node("Slice", ["a", "starts", "ends", "axes", "steps"], ["y"])], "y", [3, 3, 3],
        {"a": rand(rng, 5, 3, 7)},
        constants={"starts": ints(-1, 0), "ends": ints(-100, 100), "axes": ints(-1, -3),
                   "steps": ints(-3, 2)}, opset=13)),
    ("slice_reverse_and_step", lambda rng: Case(
        [node("Slice", ["a", "starts", "ends", "axes", "steps"], ["y"])], "y", [4, 2],
        {"a": rand(rng, 4, 6)},
        constants={"starts": ints(-1, 1), "ends": ints(INT64_MIN, 5), "axes": ints(0, 1),
                   "steps": ints(-1, 3)}, opset=13)),
    ("slice_opset11_step_middle", lambda rng: Case(
        [node("Slice", ["a", "starts", "ends", "axes", "steps"], ["y"])], "y", [2, 2, 3],
        {"a": rand(rng, 2, 7, 3)},
        constants={"starts": ints(5), "ends": ints(1), "axes": ints(1), "steps": ints(-3)}, opset=11)),
    # Concat and Split.
    ("concat_negative_axis", lambda rng: Case(
        [node("Concat", ["a", "b", "c"], ["y"], axis=-2)], "y", [2, 6, 3],
        {"a": rand(rng, 2, 1, 3), "b": rand(rng, 2, 3, 3), "c": rand(rng, 2, 2, 3)})),
    ("concat_same_operand", lambda rng: Case(
        [node("Concat", ["a", "a"], ["y"], axis=0)], "y", [4, 3], {"a": rand(rng, 2, 3)})),
    ("split_opset11_attr_unused_output", lambda rng: Case(
        [node("Split", ["a"], ["p", "q", "r"], axis=1, split=[2, 1, 2]), node("Mul", ["p", "r"], ["y"])],
        "y", [3, 2], {"a": rand(rng, 3, 5)}, opset=11)),
    ("split_opset13_input_negative_axis", lambda rng: Case(
        [node("Split", ["a", "sizes"], ["p", "q", "r"], axis=-1),
         node("Concat", ["r", "p"], ["y"], axis=-1)],
        "y", [2, 3, 4], {"a": rand(rng, 2, 3, 6)}, constants={"sizes": ints(1, 2, 3)}, opset=13)),
    ("split_opset13_equal_parts", lambda rng: Case(
        [node("Split", ["a"], ["p", "q"], axis=0), node("Sub", ["p", "q"], ["y"])],
        "y", [2, 3], {"a": rand(rng, 4, 3)}, opset=13)),
    # Gather: repeated and negative indices, other axes, scalar indices, and
    # a tied weight read by Gather and by MatMul (the two gradients add).
    ("gather_axis0_repeated_negative", lambda rng: Case(
        [node("Gather", ["a", "idx"], ["y"])], "y", [2, 3, 3], {"a": rand(rng, 5, 3)},
        constants={"idx": ints(0, 2, 0, 4, -1, 2).reshape(2, 3)})),
    ("gather_axis_neg2_int32", lambda rng: Case(
        [node("Gather", ["a", "idx"], ["y"], axis=-2)], "y", [2, 4, 4],
        {"a": rand(rng, 2, 3, 4)}, constants={"idx": np.array([1, 1, 0, 2], dtype=np.int32)})),
    ("gather_scalar_index_axis1", lambda rng: Case(
        [node("Gather", ["a", "idx"], ["y"], axis=1)], "y", [3, 4], {"a": rand(rng, 3, 5, 4)},
        constants={"idx": np.array(3, dtype=I64)})),
    ("gather_tied_embedding", lambda rng: Case(
        [node("Gather", ["w", "idx"], ["h"]), node("Transpose", ["w"], ["wt"]),
         node("MatMul", ["h", "wt"], ["y"])], "y", [2, 3, 5], {"w": rand(rng, 5, 4)},
        constants={"idx": ints(1, 3, 1, 0, 4, 4).reshape(2, 3)})),
    # Pad (constant mode): pads and value as inputs with negative (cropping)
    # pads and the value trained, the opset-2 attribute form, opset-18 axes.
    ("pad_opset11_crop_and_value", lambda rng: Case(
        [node("Pad", ["a", "pads", "v"], ["y"])], "y", [3, 3, 6],
        {"a": rand(rng, 2, 4, 3), "v": np.array(0.3)},
        constants={"pads": ints(1, -1, 0, 0, 0, 3)}, opset=11)),
    ("pad_opset10_attrs", lambda rng: Case(
        [node("Pad", ["a"], ["y"], pads=[0, 2, 1, 1], value=0.5)], "y", [3, 6],
        {"a": rand(rng, 2, 3)}, opset=10)),
    ("pad_opset18_axes", lambda rng: NewOpsetCase(
        [node("Pad", ["a", "pads", "", "axes"], ["y"])], "y", [2, 5, 4],
        {"a": rand(rng, 2, 3, 4)}, constants={"pads": ints(2, 0), "axes": ints(-2)}, opset=18)),
    # Where: the condition takes none, both branches broadcast.
    ("where_broadcast", lambda rng: Case(
        [node("Where", ["c", "a", "b"], ["y"])], "y", [2, 3, 4],
        {"a": rand(rng, 3, 1), "b": rand(rng, 2, 1, 4)},
        constants={"c": rng.random((3, 4)) < 0.5})),
    # Expand and Tile.
    ("expand_broadcast", lambda rng: Case(
        [node("Expand", ["a", "shape"], ["y"])], "y", [2, 3, 4], {"a": rand(rng, 3, 1)},
        constants={"shape": ints(2, 1, 4)})),
    ("tile_repeats", lambda rng: Case(
        [node("Tile", ["a", "reps"], ["y"])], "y", [4, 3, 6], {"a": rand(rng, 2, 3, 2)},
        constants={"reps": ints(2, 1, 3)})),
]
