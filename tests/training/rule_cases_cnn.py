"""Finite-difference cases: convolutions (Conv, ConvTranspose), pooling and
the normalisations of feature maps (BatchNormalization, InstanceNormalization).

Shapes are chosen so that strides leave a remainder (odd sizes: the
ConvTranspose of dX needs output_padding), pads are asymmetric, and groups,
depthwise, dilations, auto_pad, ceil_mode and count_include_pad each have a
case. ONNX Runtime's CPU provider runs Conv, ConvTranspose, the pooling ops
and InstanceNormalization in float32 only, so those cases are float32
(h = 1e-2; BatchNormalization runs in float64); the max-pooling inputs are
distinct values 0.05 apart, so that a step of h never changes a window's
argmax (ties, where the rule takes the first maximum as torch does, have no
finite difference).
"""
import numpy as np

from rule_case import FLOAT32, FLOAT64, Case, node, rand


def conv(shape_x, shape_w, bias=False, transpose=False, **attrs):
    op = "ConvTranspose" if transpose else "Conv"
    y_shape = attrs.pop("y_shape")

    def build(rng):
        weights = {"x": rand(rng, *shape_x), "w": rand(rng, *shape_w)}
        inputs = ["x", "w"]
        if bias:
            channels = shape_w[1] * attrs.get("group", 1) if transpose else shape_w[0]
            weights["b"] = rand(rng, channels)
            inputs.append("b")
        return Case([node(op, inputs, ["y"], **attrs)], "y", y_shape, weights, dtype=FLOAT32)
    return build


def distinct(rng, *shape):
    """Distinct values 0.05 apart, in random order (no window has a tie)."""
    count = int(np.prod(shape))
    return (rng.permutation(count) * 0.05 - count * 0.025).reshape(shape)


def pool(op, shape_x, y_shape, dtype=FLOAT32, **attrs):
    def build(rng):
        x = distinct(rng, *shape_x) if "Max" in op else rand(rng, *shape_x)
        return Case([node(op, ["x"], ["y"], **attrs)], "y", y_shape, {"x": x}, dtype=dtype)
    return build


def batch_norm(shape_x, dtype, opset=17):
    def build(rng):
        c = shape_x[1]
        constants = {"mean": rand(rng, c).astype(dtype), "var": rand(rng, c, low=0.5, high=2.0).astype(dtype)}
        weights = {"x": rand(rng, *shape_x), "scale": rand(rng, c), "b": rand(rng, c)}
        return Case([node("BatchNormalization", ["x", "scale", "b", "mean", "var"], ["y"], epsilon=1e-3)],
                    "y", shape_x, weights, constants=constants, opset=opset, dtype=dtype)
    return build


def instance_norm(shape_x, dtype):
    def build(rng):
        c = shape_x[1]
        weights = {"x": rand(rng, *shape_x), "scale": rand(rng, c), "b": rand(rng, c)}
        return Case([node("InstanceNormalization", ["x", "scale", "b"], ["y"], epsilon=1e-3)],
                    "y", shape_x, weights, dtype=dtype)
    return build


CASES = [
    # --- Conv ---
    ("conv2d_bias_pads", conv([2, 3, 7, 6], [4, 3, 3, 3], bias=True, pads=[1, 1, 1, 1], y_shape=[2, 4, 7, 6])),
    # (9 + 1 − 3) % 2 = 1 and (8 + 1 − 2) % 2 = 1: dX needs output_padding.
    ("conv2d_stride2_odd_asymmetric_pads", conv([2, 3, 9, 8], [5, 3, 3, 2], strides=[2, 2], pads=[1, 0, 0, 1],
                                                 y_shape=[2, 5, 4, 4])),
    ("conv2d_groups", conv([2, 4, 6, 7], [6, 2, 3, 3], bias=True, group=2, strides=[2, 1], y_shape=[2, 6, 2, 5])),
    ("conv2d_depthwise_dilated", conv([1, 4, 7, 7], [8, 1, 3, 3], group=4, dilations=[2, 2], pads=[2, 2, 2, 2],
                                      y_shape=[1, 8, 7, 7])),
    ("conv2d_dilation_stride", conv([2, 2, 11, 10], [3, 2, 3, 3], dilations=[2, 1], strides=[3, 2],
                                    pads=[1, 2, 0, 1], y_shape=[2, 3, 3, 6])),
    ("conv2d_auto_pad_same_upper", conv([1, 2, 7, 8], [3, 2, 4, 3], strides=[2, 2], auto_pad="SAME_UPPER",
                                        y_shape=[1, 3, 4, 4])),
    ("conv2d_auto_pad_same_lower", conv([1, 2, 7, 8], [3, 2, 4, 3], strides=[2, 2], auto_pad="SAME_LOWER",
                                        y_shape=[1, 3, 4, 4])),
    ("conv2d_auto_pad_valid", conv([2, 2, 8, 7], [3, 2, 3, 3], bias=True, strides=[2, 2], auto_pad="VALID",
                                   y_shape=[2, 3, 3, 3])),
    ("conv1d_stride_bias", conv([2, 3, 11], [4, 3, 3], bias=True, strides=[2], pads=[1, 0], y_shape=[2, 4, 5])),
    ("conv3d_groups_stride", conv([1, 4, 5, 6, 5], [4, 2, 3, 2, 3], group=2, strides=[2, 1, 2],
                                  pads=[1, 0, 1, 0, 1, 1], y_shape=[1, 4, 2, 6, 3])),
    # --- ConvTranspose ---
    ("convtranspose2d_stride_output_padding", conv([2, 4, 4, 5], [4, 3, 3, 3], bias=True, transpose=True,
                                                   strides=[2, 2], pads=[1, 1, 1, 0], output_padding=[1, 0],
                                                   y_shape=[2, 3, 8, 10])),
    ("convtranspose2d_groups_dilation", conv([1, 4, 5, 4], [4, 2, 3, 2], transpose=True, group=2,
                                             dilations=[2, 1], strides=[1, 2], y_shape=[1, 4, 9, 8])),
    ("convtranspose1d_stride3", conv([2, 3, 6], [3, 2, 4], transpose=True, strides=[3], pads=[1, 2],
                                     y_shape=[2, 2, 16])),
    # --- MaxPool ---
    ("maxpool2d_overlapping_pads", pool("MaxPool", [2, 3, 7, 8], [2, 3, 4, 4], kernel_shape=[3, 3],
                                        strides=[2, 2], pads=[1, 1, 1, 1])),
    ("maxpool2d_non_overlapping", pool("MaxPool", [2, 2, 6, 6], [2, 2, 3, 3], kernel_shape=[2, 2], strides=[2, 2])),
    ("maxpool2d_ceil_mode_dilation", pool("MaxPool", [1, 2, 10, 9], [1, 2, 5, 5], kernel_shape=[2, 3],
                                          strides=[2, 2], dilations=[2, 1], pads=[0, 1, 0, 0], ceil_mode=1)),
    ("maxpool2d_auto_pad_same_upper", pool("MaxPool", [1, 2, 7, 7], [1, 2, 4, 4], kernel_shape=[3, 3],
                                           strides=[2, 2], auto_pad="SAME_UPPER")),
    ("maxpool1d_ceil_mode", pool("MaxPool", [2, 3, 10], [2, 3, 5], kernel_shape=[3], strides=[2], ceil_mode=1)),
    ("maxpool3d", pool("MaxPool", [1, 2, 5, 4, 5], [1, 2, 2, 3, 2], kernel_shape=[2, 2, 2], strides=[2, 1, 2])),
    ("globalmaxpool", pool("GlobalMaxPool", [2, 3, 4, 5], [2, 3, 1, 1])),
    # --- AveragePool ---
    ("averagepool2d_pads_exclude_pad", pool("AveragePool", [2, 3, 7, 8], [2, 3, 4, 4], kernel_shape=[3, 3],
                                            strides=[2, 2], pads=[1, 1, 1, 1])),
    ("averagepool2d_pads_include_pad", pool("AveragePool", [2, 3, 7, 8], [2, 3, 4, 4], kernel_shape=[3, 3],
                                            strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
    ("averagepool2d_ceil_mode_exclude_pad", pool("AveragePool", [1, 2, 9, 9], [1, 2, 5, 5], kernel_shape=[3, 3],
                                                 strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1)),
    ("averagepool2d_ceil_mode_include_pad", pool("AveragePool", [1, 2, 9, 9], [1, 2, 5, 5], kernel_shape=[3, 3],
                                                 strides=[2, 2], pads=[1, 0, 0, 1], ceil_mode=1,
                                                 count_include_pad=1)),
    ("averagepool1d_ceil_mode", pool("AveragePool", [2, 2, 10], [2, 2, 5], kernel_shape=[3], strides=[2], ceil_mode=1)),
    ("averagepool2d_auto_pad_same_lower", pool("AveragePool", [1, 2, 7, 6], [1, 2, 3, 2], kernel_shape=[3, 3],
                                               strides=[3, 3], auto_pad="SAME_LOWER")),
    ("globalaveragepool", pool("GlobalAveragePool", [2, 3, 4, 5], [2, 3, 1, 1])),
    # --- normalisation ---
    ("batchnorm_inference", batch_norm([2, 3, 4, 5], FLOAT64)),
    ("batchnorm_rank2_opset13", batch_norm([4, 3], FLOAT64, opset=13)),
    ("instancenorm", instance_norm([2, 3, 4, 5], FLOAT32)),
]
