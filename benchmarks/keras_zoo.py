"""Export five Keras models with TensorFlow's converter, as users export them today.

    python -m venv tfvenv && tfvenv/bin/pip install -r benchmarks/requirements-keras.txt
    tfvenv/bin/python benchmarks/keras_zoo.py [--out DIR] [--only NAME,...] [--float-io]
        [--raw-batch-norm]

Writes ``NAME.tflite`` for each model below into ``--out`` (default
``~/.cache/arenaplan/keras_zoo``) and a ``SHA256SUMS`` beside them; ``--float-io``
also writes ``NAME.float_io.tflite``, the same model with the converter's float32
inputs and outputs (its default when ``inference_input_type`` is not set: a
QUANTIZE after each input and a DEQUANTIZE before each output). TensorFlow is not a
dependency of arenaplan: run this in a virtual environment of its own (TF 2.21,
Keras 3); ``benchmarks/peers_zoo.py`` then measures the files with arenaplan, Vela
and xformer.

Every model is converted from the Keras model (``TFLiteConverter.from_keras_model``:
the signature def ``serving_default`` is kept, the batch dimension is dynamic in the
signature as Keras gives it) with full-integer post-training quantisation
(``Optimize.DEFAULT``, a representative dataset of 16 seeded random samples) and
integer inputs and outputs. Weights are random but seeded
(``keras.utils.set_random_seed`` after ``keras.backend.clear_session``, so each
model's file does not depend on which others are built), and every
BatchNormalization's moving mean and variance are set to the statistics of one
batch of the representative samples, as training leaves them (``--raw-batch-norm``
keeps Keras' initial 0 and 1: through MobileNetV2's random layers the activations
then shrink until the logits' scale is about 1e-8, and TFLM's SOFTMAX Prepare aborts
the process). Running the script twice writes byte-identical files.

Models (int8 unless said; the sizes were tuned to come close to the figures of the
held-out models they stand for):

    mobilenet_v2_0.35_96   keras.applications.MobileNetV2(alpha=0.35,
                           input_shape=(96, 96, 3), weights=None, classes=2)
                           (person or not), GlobalAveragePooling2D (MEAN) and the
                           Dense softmax top (xformer's arena: 150,320 B with 2 or 10
                           classes, 151,384 B with the default 1,000)
    resnet8_32             MLPerf Tiny's image classification ResNet-8
                           (resnet_v1_eembc): 32x32x3, a 16-filter 3x3 stem and three
                           stacks of two 3x3 convolutions (16, 32, 64 filters, the
                           last two stride 2 with a 1x1 projection) each with BN
                           (folded) and a skip ADD, AveragePooling2D(8), Flatten
                           (SHAPE, STRIDED_SLICE, PACK, RESHAPE in Keras 3), Dense(10)
                           softmax
    bn_classifier          160x120x3 (H x W); four 3x3 stride-2 Conv2D + ReLU with
                           16, 16, 32, 64 filters, each followed by a
                           BatchNormalization after the activation, which the
                           converter cannot fold into the convolution: it stays as a
                           MUL and an ADD with per-channel constants (gamma and beta
                           seeded random values, as if trained); GlobalAveragePooling2D
                           (MEAN), Dense(10) softmax
    residual_fullres       an EDSR-like image-to-image network at full resolution:
                           64x64x3, a 3x3 stem Conv2D of 16 filters, two residual
                           blocks (Conv2D 16 + ReLU, Conv2D 16, skip ADD), a global
                           skip ADD of the stem's output, a 3x3 Conv2D to 3 channels;
                           every convolution stride 1, 'same'
    unet_denoiser_int16    int16 activations, int8 weights
                           (EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
                           int16 I/O): a U-Net over one frame of 128 frequency bins
                           ([1, 1, 128, 1], input 'spec') with a recurrent state
                           ([1, 128], input 'state'): three (1, 3) stride-(1, 2)
                           Conv2D + ReLU (16, 8, 8 filters), a single-step GRU cell
                           written with Dense, sigmoid, tanh, Multiply, Add and
                           Subtract layers (h' = n + u * (h - n)) whose new state is
                           the second output, three Conv2DTranspose (TRANSPOSE_CONV)
                           each after a Concatenate with the encoder's skip, the
                           last one a sigmoid mask over the 128 bins (first output);
                           the converter orders the graph's inputs (state, spec) and
                           outputs (state, mask) otherwise than the signature's

The PyPI ``tflite-micro`` runtime runs every model (``peers_zoo.py`` checks it).
A few minutes on two cores.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_OUT = Path.home() / ".cache" / "arenaplan" / "keras_zoo"
SAMPLES = 16  # representative samples per model
SEED = 2024


@dataclass(frozen=True)
class Spec:
    """One model: its builder, its inputs' value ranges and its activation type."""

    name: str
    build: Callable[[Any], Any]  # keras module -> keras.Model
    ranges: dict[str, tuple[float, float]]  # input name -> (low, high) of the samples
    int16: bool = False


def _mobilenet_v2(keras: Any) -> Any:
    return keras.applications.MobileNetV2(
        alpha=0.35, input_shape=(96, 96, 3), weights=None, classes=2
    )


def _resnet8(keras: Any) -> Any:
    layers = keras.layers

    def conv(x: Any, filters: int, kernel: int = 3, strides: int = 1) -> Any:
        reg = keras.regularizers.l2(1e-4)
        return layers.Conv2D(
            filters,
            kernel,
            strides=strides,
            padding="same",
            kernel_initializer="he_normal",
            kernel_regularizer=reg,
        )(x)

    inputs = keras.Input(shape=(32, 32, 3))
    x = layers.Activation("relu")(layers.BatchNormalization()(conv(inputs, 16)))
    for filters, strides in ((16, 1), (32, 2), (64, 2)):
        y = layers.Activation("relu")(layers.BatchNormalization()(conv(x, filters, 3, strides)))
        y = layers.BatchNormalization()(conv(y, filters))
        if strides != 1:
            x = conv(x, filters, 1, strides)
        x = layers.Activation("relu")(layers.add([x, y]))
    x = layers.AveragePooling2D(pool_size=int(min(x.shape[1:3])))(x)
    x = layers.Flatten()(x)
    outputs = layers.Dense(10, activation="softmax", kernel_initializer="he_normal")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def _bn_classifier(keras: Any) -> Any:
    import numpy as np

    layers = keras.layers
    inputs = keras.Input(shape=(160, 120, 3))
    x = inputs
    for filters in (16, 16, 32, 64):
        x = layers.Conv2D(filters, 3, strides=2, padding="same", activation="relu")(x)
        x = layers.BatchNormalization()(x)  # after the activation: not folded
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(10, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    rng = np.random.default_rng(SEED)
    for layer in model.layers:
        if isinstance(layer, layers.BatchNormalization):
            shape = layer.get_weights()[0].shape
            layer.set_weights(
                [
                    rng.uniform(0.5, 1.5, shape),
                    rng.uniform(-0.5, 0.5, shape),
                    rng.uniform(-0.5, 0.5, shape),
                    rng.uniform(0.5, 1.5, shape),
                ]
            )
    return model


def _residual_fullres(keras: Any) -> Any:
    layers = keras.layers

    def conv(x: Any, filters: int, activation: str | None = None) -> Any:
        return layers.Conv2D(filters, 3, padding="same", activation=activation)(x)

    inputs = keras.Input(shape=(64, 64, 3))
    stem = conv(inputs, 16)
    x = stem
    for _ in range(2):
        x = layers.Add()([x, conv(conv(x, 16, "relu"), 16)])
    x = layers.Add()([stem, x])
    return keras.Model(inputs=inputs, outputs=conv(x, 3))


def _unet_denoiser(keras: Any) -> Any:
    layers = keras.layers
    bins, filters = 128, (16, 8, 8)
    depth = len(filters)
    hidden = (bins >> depth) * filters[-1]
    spec = keras.Input(shape=(1, bins, 1), name="spec")
    state = keras.Input(shape=(hidden,), name="state")
    skips, x = [], spec
    for f in filters:
        x = layers.Conv2D(f, (1, 3), strides=(1, 2), padding="same", activation="relu")(x)
        skips.append(x)
    z = layers.Reshape((hidden,))(x)

    def gate(activation: str, reset: Any = None) -> Any:
        recurrent = layers.Dense(hidden, use_bias=reset is not None)(state)
        if reset is not None:
            recurrent = layers.Multiply()([reset, recurrent])
        return layers.Activation(activation)(layers.Add()([layers.Dense(hidden)(z), recurrent]))

    r = gate("sigmoid")
    u = gate("sigmoid")
    n = gate("tanh", reset=r)
    new_state = layers.Add()([n, layers.Multiply()([u, layers.Subtract()([state, n])])])
    x = layers.Reshape((1, bins >> depth, filters[-1]))(new_state)
    for i in reversed(range(depth)):
        x = layers.Concatenate()([x, skips[i]])
        x = layers.Conv2DTranspose(
            filters[i - 1] if i else 1,
            (1, 3),
            strides=(1, 2),
            padding="same",
            activation="relu" if i else "sigmoid",
        )(x)
    return keras.Model(inputs=[spec, state], outputs=[x, new_state])


MODELS = (
    Spec("mobilenet_v2_0.35_96", _mobilenet_v2, {"": (-1.0, 1.0)}),
    Spec("resnet8_32", _resnet8, {"": (0.0, 1.0)}),
    Spec("bn_classifier", _bn_classifier, {"": (0.0, 1.0)}),
    Spec("residual_fullres", _residual_fullres, {"": (0.0, 1.0)}),
    Spec(
        "unet_denoiser_int16",
        _unet_denoiser,
        {"spec": (0.0, 1.0), "state": (-1.0, 1.0)},
        int16=True,
    ),
)


def _representative(model: Any, spec: Spec) -> Callable[[], Iterator[Any]]:
    import numpy as np

    def samples() -> Iterator[Any]:
        rng = np.random.default_rng(SEED)
        for _ in range(SAMPLES):
            if len(model.inputs) == 1:
                low, high = spec.ranges[""]
                shape = (1, *model.inputs[0].shape[1:])
                yield [rng.uniform(low, high, shape).astype(np.float32)]
            else:  # by the signature's input names: the converter's order is its own
                batch = {}
                for tensor in model.inputs:
                    low, high = spec.ranges[tensor.name]
                    shape = (1, *tensor.shape[1:])
                    batch[tensor.name] = rng.uniform(low, high, shape).astype(np.float32)
                yield batch

    return samples


def _calibrate_batch_norm(keras: Any, model: Any, spec: Spec) -> None:
    """Set every BatchNormalization's moving mean and variance to the statistics of
    one batch of the representative samples, layer after layer (as training would
    leave them): with Keras' initial ones (0 and 1) activations shrink through a deep
    random network until the converter gives the logits a scale near 1e-8, whose
    SOFTMAX TFLM refuses by aborting the process."""
    import numpy as np

    norms = [x for x in model.layers if isinstance(x, keras.layers.BatchNormalization)]
    if not norms:
        return
    batches = list(_representative(model, spec)())
    if isinstance(batches[0], dict):
        batch = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    else:
        batch = [np.concatenate([b[i] for b in batches]) for i in range(len(batches[0]))]
    momenta = [x.momentum for x in norms]
    for layer in norms:
        layer.momentum = 0.0
    model(batch if len(batch) > 1 else batch[0], training=True)
    for layer, momentum in zip(norms, momenta, strict=True):
        layer.momentum = momentum


def export(spec: Spec, float_io: bool, calibrate: bool = True) -> bytes:
    """The .tflite of one model: built afresh, seeded, converted."""
    import keras
    import tensorflow as tf

    keras.backend.clear_session()
    keras.utils.set_random_seed(SEED)
    tf.config.experimental.enable_op_determinism()
    model = spec.build(keras)
    if calibrate:
        _calibrate_batch_norm(keras, model, spec)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = _representative(model, spec)
    if spec.int16:
        ops = tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    else:
        ops = tf.lite.OpsSet.TFLITE_BUILTINS_INT8
    converter.target_spec.supported_ops = [ops]
    if not float_io:
        converter.inference_input_type = tf.int16 if spec.int16 else tf.int8
        converter.inference_output_type = converter.inference_input_type
    return converter.convert()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write into")
    parser.add_argument("--only", help="comma-separated model names (default: all)")
    parser.add_argument(
        "--float-io",
        action="store_true",
        help="also write NAME.float_io.tflite (float32 inputs and outputs)",
    )
    parser.add_argument(
        "--raw-batch-norm",
        action="store_true",
        help="keep Keras' initial batch-norm statistics (MobileNetV2 then aborts TFLM)",
    )
    args = parser.parse_args(argv)
    names = [m.name for m in MODELS]
    wanted = args.only.split(",") if args.only else names
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(names)}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    sums = args.out / "SHA256SUMS"
    lines = (
        dict(line.split("  ", 1)[::-1] for line in sums.read_text().splitlines())
        if (sums.exists())
        else {}
    )
    for spec in MODELS:
        if spec.name not in wanted:
            continue
        for float_io in (False, True) if args.float_io else (False,):
            path = args.out / f"{spec.name}{'.float_io' if float_io else ''}.tflite"
            data = export(spec, float_io, not args.raw_batch_norm)
            path.write_bytes(data)
            digest = hashlib.sha256(data).hexdigest()
            lines[path.name] = digest
            print(f"{path}  {len(data):,} B  sha256 {digest[:16]}", file=sys.stderr)
    sums.write_text("".join(f"{d}  {n}\n" for n, d in sorted(lines.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
