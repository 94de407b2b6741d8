"""Make the converter-made int16x8 models beside this file (run by hand, not by tests).

Needs TensorFlow (``pip install tensorflow-cpu``; made with 2.21): a small
denoiser-like Keras CNN with two outputs (CONV_2D, LEAKY_RELU, DEPTHWISE_CONV_2D,
ADD, MUL, LOGISTIC, TANH, CONCATENATION, MEAN, FULLY_CONNECTED, SOFTMAX), its
weights drawn at random with a fixed seed, converted with int16 activations and
int8 weights: once with the converter's int64 biases (``cnn_int16x8.tflite``),
once with its int32 bias option (``cnn_int16x8_int32_bias.tflite``). The
converter keeps quantisation min/max on int16 models and writes signature defs
and metadata, so these files differ from the writer's layout in every way a
converter's file does.

    python tests/export/data/make_converter_models.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

HERE = Path(__file__).resolve().parent
SHAPE = (1, 16, 16, 4)


def representative():
    rng = np.random.default_rng(0)
    for _ in range(50):
        yield [rng.standard_normal(SHAPE).astype(np.float32)]


def denoiser() -> tf.keras.Model:
    tf.keras.utils.set_random_seed(0)
    layers = tf.keras.layers
    x = layers.Input(SHAPE[1:], batch_size=1)
    c = layers.LeakyReLU(0.1)(layers.Conv2D(8, 3, padding="same")(x))
    d = layers.DepthwiseConv2D(3, padding="same")(c)
    a = layers.Add()([c, d])
    m = layers.Multiply()([a, d])
    gates = layers.Concatenate()([layers.Activation("sigmoid")(m), layers.Activation("tanh")(a)])
    mask = layers.Activation("sigmoid")(layers.Conv2D(4, 1)(gates))
    clean = layers.Multiply()([mask, x])
    classes = layers.Softmax()(layers.Dense(10)(layers.GlobalAveragePooling2D()(c)))
    return tf.keras.Model(x, [clean, classes])


def convert(model: tf.keras.Model, int32_bias: bool) -> bytes:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [
        tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
    ]
    converter.inference_input_type = converter.inference_output_type = tf.int16
    if int32_bias:
        converter._experimental_full_integer_quantization_bias_type = tf.int32
    return converter.convert()


def main() -> None:
    model = denoiser()
    (HERE / "cnn_int16x8.tflite").write_bytes(convert(model, False))
    (HERE / "cnn_int16x8_int32_bias.tflite").write_bytes(convert(model, True))


if __name__ == "__main__":
    main()
