"""The Signal library's custom kernels (``signal/micro/kernels``).

Sources: signal/micro/kernels/window.cc, signal/micro/kernels/energy.cc,
signal/micro/kernels/filter_bank_log.cc, signal/micro/kernels/pcan.cc,
signal/micro/kernels/filter_bank.cc, signal/micro/kernels/filter_bank_spectral_subtraction.cc,
signal/micro/kernels/rfft.cc, signal/micro/kernels/irfft.cc, signal/micro/kernels/stacker.cc,
signal/micro/kernels/delay.cc, signal/micro/kernels/framer.cc,
signal/micro/kernels/overlap_add.cc, signal/micro/kernels/fft_auto_scale_kernel.cc,
signal/micro/kernels/filter_bank_square_root.cc, signal/src/circular_buffer.h,
signal/src/irfft_float.cc.

No kernel has an options struct (custom options are read in Init); none is
refused beyond its registration, none runs in place.

- tail: each its Init params struct (FftAutoScale and FilterBankSquareRoot none);
  then FilterBank a uint64 work area of num_channels + 1 entries;
  FilterBankSpectralSubtraction a uint32 noise estimate per channel; Rfft and
  Irfft the kissfft state for fft_length (Irfft float with an IrfftFloatState in
  front); Stacker one circular buffer (all in Init); Delay, Framer pointer arrays
  and a circular buffer per outer element, OverlapAdd a pointer array and a frame
  per outer element (in Prepare);
- scratch: Rfft, fft_length samples of its type (int16: 2 B, else 4 B).
"""

from __future__ import annotations

from arenaplan.ir.dtypes import DType
from arenaplan.ir.model import Tensor
from arenaplan.tflm.facts import Kernel, OpRule, OpView, ScratchView, Unmodelled


def _kiss_fftr_bytes(n: int, cpx: int, pointer: int) -> int:
    """kiss_fftr_alloc(n): the real-FFT state, a complex FFT of n/2 inside.

    kiss_fftr_state (3 pointers) + kiss_fft_state (nfft, inverse, 64 factor ints,
    one twiddle) + (n/2 - 1) more twiddles + 3/2 * n/2 complex values;
    ``cpx``: bytes of a complex sample (4 for int16, 8 for int32 and float)."""
    half = n // 2
    return 3 * pointer + (8 + 256 + cpx) + cpx * (half - 1) + cpx * (3 * half // 2)


def _fft_type(v: OpView) -> DType:
    """The kernel's sample type, from the custom option "T" (a TensorType code)."""
    code = v.custom().get("T")
    dtype = DType.from_code(code) if isinstance(code, int) else v.dtype(0)
    if dtype not in (DType.INT16, DType.INT32, DType.FLOAT32):
        raise Unmodelled(f"FFT type {dtype}")
    return dtype


def _rfft(v: OpView) -> list[int]:
    """RfftInit: the kissfft state for fft_length."""
    dtype = _fft_type(v)
    cpx = 4 if dtype is DType.INT16 else 8
    return [_kiss_fftr_bytes(v.int_option("fft_length", 0), cpx, v.pointer)]


def _irfft(v: OpView) -> list[int]:
    """IrfftInit: the inverse kissfft state; the float kernel puts an
    IrfftFloatState header in front."""
    dtype = _fft_type(v)
    cpx = 4 if dtype is DType.INT16 else 8
    state = _kiss_fftr_bytes(v.int_option("fft_length", 0), cpx, v.pointer)
    if dtype is DType.FLOAT32:
        state += v.state["IrfftFloatState"]
    return [state]


def _rfft_scratch(ctx: ScratchView) -> list[int]:
    width = 2 if ctx.t(0).dtype is DType.INT16 else 4
    return [ctx.custom("fft_length") * width]


def _filter_bank(v: OpView) -> list[int]:
    """FilterBankInit: a uint64 work area of num_channels + 1 entries."""
    return [8 * (v.int_option("num_channels", 0) + 1)]


def _spectral_subtraction(v: OpView) -> list[int]:
    """FilterBankSpectralSubtractionInit: a uint32 noise estimate per channel."""
    return [4 * v.int_option("num_channels", 0)]


def _circular_state(v: OpView, capacity: int) -> int:
    """CircularBufferGetNeededMemory: header + 2 * capacity int16 samples."""
    return v.state["CircularBuffer"] + 2 * 2 * capacity


def _outer_and_inner(t: Tensor | None) -> tuple[int, int]:
    if t is None or not t.shape:
        raise Unmodelled("input without dims")
    inner = t.shape[-1]
    return t.elements // max(inner, 1), inner


def _stacker(v: OpView) -> list[int]:
    """StackerInit: one circular buffer of channels * (left + right + 1) samples."""
    size = v.int_option("num_channels") * (
        v.int_option("stacker_left_context") + v.int_option("stacker_right_context") + 1
    )
    return [_circular_state(v, size)]


def _delay(v: OpView) -> list[int]:
    """DelayPrepare: pointer arrays, then one circular buffer of frame + delay
    samples per outer element."""
    outer, inner = _outer_and_inner(v.input(0))
    capacity = inner + v.int_option("delay_length", 0)
    return [v.pointer * outer] * 2 + [_circular_state(v, capacity)] * outer


def _framer(v: OpView) -> list[int]:
    """FramerPrepare: pointer arrays, then per outer element a circular buffer of
    frame_size rounded up to a multiple of frame_step."""
    outer, _ = _outer_and_inner(v.input(0))
    size, step = v.int_option("frame_size", 0), v.int_option("frame_step", 1)
    capacity = -(-size // max(step, 1)) * step
    return [v.pointer * outer] * 2 + [_circular_state(v, capacity)] * outer


def _overlap_add(v: OpView) -> list[int]:
    """OverlapAddPrepare: a pointer array, then a frame of samples per outer element."""
    x = v.input(0)
    if x is None or len(x.shape) < 2:
        raise Unmodelled("input of rank < 2")
    frame, n_frames = x.shape[-1], x.shape[-2]
    outer = x.elements // max(frame * n_frames, 1)
    return [v.pointer * outer] + [frame * x.dtype.itemsize] * outer


CUSTOM = {
    "SignalWindow": Kernel(OpRule(None, "TFLMSignalWindowParams")),
    "SignalEnergy": Kernel(OpRule(None, "TFLMSignalEnergyParams")),
    "SignalFilterBankLog": Kernel(OpRule(None, "TFLMSignalLogParams")),
    "SignalPCAN": Kernel(OpRule(None, "TfLitePcanParams")),
    "SignalFilterBank": Kernel(OpRule(None, "TFLMSignalFilterBankParams", init_extra=_filter_bank)),
    "SignalFilterBankSpectralSubtraction": Kernel(
        OpRule(None, "TFLMSignalSpectralSubtractionParams", init_extra=_spectral_subtraction)
    ),
    "SignalRfft": Kernel(
        OpRule(None, "TfLiteAudioFrontendRfftParams", init_extra=_rfft), scratch=_rfft_scratch
    ),
    "SignalIrfft": Kernel(OpRule(None, "TfLiteAudioFrontendIrfftParams", init_extra=_irfft)),
    "SignalStacker": Kernel(OpRule(None, "TFLMSignalStackerParams", init_extra=_stacker)),
    "SignalDelay": Kernel(OpRule(None, "TFLMSignalFrontendDelayParams", prepare=_delay)),
    "SignalFramer": Kernel(OpRule(None, "TFLMSignalFramerParams", prepare=_framer)),
    "SignalOverlapAdd": Kernel(OpRule(None, "TFLMSignalOverlapAddParams", prepare=_overlap_add)),
    "SignalFftAutoScale": Kernel(OpRule()),
    "SignalFilterBankSquareRoot": Kernel(OpRule()),
}
