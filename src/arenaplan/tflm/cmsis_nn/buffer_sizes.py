"""CMSIS-NN's buffer-size functions, one Python function each, for the three feature
levels of ``tflm.kernel_sets`` ("c", "dsp", "mve") as GCC compiles them
(arm-none-eabi-gcc, or the host's gcc for "c"). TFLM's CMSIS-NN kernels ask them in
Prepare (``tflm.cmsis_nn.conv`` and the others say with what).

Sources (CMSIS-NN as TFLM's Makefile downloads it):
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/ConvolutionFunctions/arm_convolve_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/ConvolutionFunctions/arm_convolve_get_buffer_sizes_s16.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/ConvolutionFunctions/arm_depthwise_conv_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/ConvolutionFunctions/arm_depthwise_conv_get_buffer_sizes_s4.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/ConvolutionFunctions/arm_transpose_conv_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/FullyConnectedFunctions/arm_fully_connected_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/PoolingFunctions/arm_avgpool_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/PoolingFunctions/arm_avgpool_get_buffer_sizes_s16.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Source/SVDFunctions/arm_svdf_get_buffer_sizes_s8.c,
tensorflow/lite/micro/tools/make/downloads/cmsis_nn/Include/arm_nnsupportfunctions.h.

Arm Compiler 6 differs in two places that are not modelled: a 1x1 stride-1
convolution with DSP asks for ``4 * C_in`` bytes (GCC: 0), and MVE turns a
depthwise convolution of one input channel into a convolution above 8 output
channels (GCC: above 1). Sizes in bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

CH_IN_BLOCK_MVE = 124  # arm_nnsupportfunctions.h: channels per block, MVE depthwise
REVERSE_TCOL_EFFICIENT_THRESHOLD = 16  # input channels above which transpose conv reverses
DW_ONE_IN_CH_THRESHOLD = 1  # CONVERT_DW_CONV_WITH_ONE_INPUT_CH_AND_OUTPUT_CH_ABOVE_THRESHOLD (GCC)
# pixels CMSIS-NN's int8 matrix products (arm_nn_mat_mult_nt_t_s8, arm_convolve_s8's
# im2col) take at a time, per features: 2 in plain C and with DSP, 4 with MVE
PIXEL_GROUP = {"c": 2, "dsp": 2, "mve": 4}


@dataclass(frozen=True, slots=True)
class Dims:
    """``cmsis_nn_dims``: batch (or filter count), height, width, channels."""

    n: int
    h: int
    w: int
    c: int


@dataclass(frozen=True, slots=True)
class Window:
    """What the size functions read of ``cmsis_nn_conv_params`` (and dw_conv_params):
    strides, padding before the first row/column (TFLM's ``padding.height/width``),
    dilations."""

    stride_h: int = 1
    stride_w: int = 1
    pad_h: int = 0
    pad_w: int = 0
    dilation_h: int = 1
    dilation_w: int = 1


def is_1x1(p: Window, x: Dims, f: Dims) -> bool:
    """arm_nn_is_convolve_1x1."""
    return (
        p.pad_w == 0 and p.pad_h == 0 and f.w == 1 and f.h == 1
        and p.dilation_w == 1 and p.dilation_h == 1 and x.c == f.c
    )  # fmt: skip


def _is_1_x_n(p: Window, x: Dims, f: Dims) -> bool:
    """arm_nn_is_convolve_1_x_n."""
    return (
        x.h == 1 and p.dilation_w == 1 and f.h == 1
        and (p.stride_w * x.c) % 4 == 0 and x.c == f.c
    )  # fmt: skip


def convolve_s8_buffer(features: str, x: Dims, f: Dims) -> int:
    """arm_convolve_s8_get_buffer_size: the im2col columns (two int16 rows of them,
    4-aligned; with MVE four int8 rows in 16-lane blocks)."""
    cols = x.c * f.w * f.h
    if features == "mve":
        return 4 * -(-cols // 16) * 16
    return 2 * (-(-cols // 4) * 4) * 2


def _convolve_1_x_n_s8_mve(p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_convolve_1_x_n_s8_get_buffer_size_mve."""
    total_pad = (y.w - 1) * p.stride_w + f.w - x.w
    asym = total_pad % 2 if total_pad >= 0 else -(-total_pad % 2)  # C's remainder
    right = max(1, (p.pad_w + asym + p.stride_w - 1) // p.stride_w) if p.pad_w + asym else 0
    left = max(1, (p.pad_w + p.stride_w - 1) // p.stride_w) if p.pad_w else 0
    middle = max(y.w - (right + left), 0)
    if right + middle + left != y.w:
        return convolve_s8_buffer("mve", x, f)
    pad_left = p.pad_w * x.c
    pad_right = right * x.c if asym else pad_left
    elems_left = f.w * x.c
    return max(elems_left + pad_left, elems_left - x.c + pad_right)


def convolve_wrapper_s8_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_convolve_wrapper_s8_get_buffer_size (also TFLM's size for int4 filters).

    1x1 convolutions need none (GCC); 1xN ones the generic size, or with MVE their
    own; the rest the generic im2col size. DSP and plain C agree under GCC."""
    if is_1x1(p, x, f):
        return 0
    if _is_1_x_n(p, x, f) and features == "mve":
        return _convolve_1_x_n_s8_mve(p, x, f, y)
    return convolve_s8_buffer(features, x, f)


def convolve_wrapper_s16_buffer(features: str, x: Dims, f: Dims) -> int:
    """arm_convolve_wrapper_s16_get_buffer_size: two int16 im2col rows; with MVE four,
    in 8-lane blocks."""
    cols = x.c * f.w * f.h
    if features == "mve":
        return 4 * -(-cols // 8) * 8 * 2
    return 2 * cols * 2


def _dw_opt_s8(features: str, x: Dims, f: Dims) -> int:
    """arm_depthwise_conv_s8_opt_get_buffer_size."""
    if features == "mve":
        return 4 * CH_IN_BLOCK_MVE * f.w * f.h
    if features == "dsp":
        return x.c * f.w * f.h * 2
    return 0


def depthwise_wrapper_s8_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_depthwise_conv_wrapper_s8_get_buffer_size. ``f.c`` is the output depth.

    With MVE, one input channel and more than one output channel, the kernel runs
    as a convolution and asks for its im2col size plus the reordered filter. TFLM's
    Prepare leaves the stride of the parameters it passes unset, which that size
    reads only for a single-row input with a single-row filter (a 1xN convolution);
    the generic MVE size is taken there."""
    if features == "mve" and x.c == 1 and y.c > DW_ONE_IN_CH_THRESHOLD:
        as_conv = Dims(y.c, f.h, f.w, f.n)  # the filter seen as a convolution's
        size = 0 if is_1x1(p, x, as_conv) else convolve_s8_buffer("mve", x, as_conv)
        return size + y.c * f.h * f.w * f.n
    if x.c == y.c and x.n == 1 and p.dilation_w == 1 and p.dilation_h == 1:
        if features != "mve" and f.w == 3 and f.h == 3 and p.pad_h <= 1 and p.pad_w <= 1:
            return 0  # arm_depthwise_conv_3x3_s8 needs none
        return _dw_opt_s8(features, x, f)
    return 0


def depthwise_wrapper_s4_buffer(features: str, p: Window, x: Dims, f: Dims, y: Dims) -> int:
    """arm_depthwise_conv_wrapper_s4_get_buffer_size: the optimised kernel's size
    (the DSP one also in plain C) whenever it applies, with no 3x3 exception."""
    if x.c == y.c and x.n == 1 and p.dilation_w == 1 and p.dilation_h == 1:
        return _dw_opt_s8("mve" if features == "mve" else "dsp", x, f)
    return 0


def fully_connected_s8_buffer(features: str, output_depth: int) -> int:
    """arm_fully_connected_s8_get_buffer_size: with MVE, an int32 kernel sum per
    output channel; else none."""
    return 4 * output_depth if features == "mve" else 0


def avgpool_buffer(features: str, channels: int) -> int:
    """arm_avgpool_s8/s16_get_buffer_size: an int32 accumulator per channel with DSP
    (not with MVE, not in plain C)."""
    return 4 * channels if features == "dsp" else 0


def svdf_s8_buffer(features: str, num_filters: int) -> int:
    """arm_svdf_s8_get_buffer_size: with MVE an int32 kernel sum per filter."""
    return 4 * num_filters if features == "mve" else 0


def _reverse_conv(stride_h: int, stride_w: int, x: Dims) -> bool:
    return stride_w <= 2 and stride_h <= 2 and x.c > REVERSE_TCOL_EFFICIENT_THRESHOLD


def transpose_conv_s8_buffer(
    features: str, stride_h: int, stride_w: int, x: Dims, f: Dims, y: Dims
) -> int:
    """arm_transpose_conv_s8_get_buffer_size. Strides up to 2 and more than 16 input
    channels: the im2col size of the stride-upsampled input; else int32 rows of the
    output (CMSIS-NN takes ``max(filter width, stride height)`` here, as written)."""
    if _reverse_conv(stride_h, stride_w, x):
        return convolve_s8_buffer(features, Dims(x.n, x.h * stride_h, x.w * stride_w, x.c), f)
    row = ((x.w - 1) * stride_w + max(f.w, stride_h)) * y.c
    return row * max(f.h, stride_h) * 4


def transpose_conv_reverse_buffer(stride_h: int, stride_w: int, x: Dims, f: Dims) -> int:
    """arm_transpose_conv_s8_get_reverse_conv_buffer_size: the reversed filter."""
    return x.c * f.w * f.h * f.n if _reverse_conv(stride_h, stride_w, x) else 0
