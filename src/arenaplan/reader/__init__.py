"""Reading `.tflite` files into the IR."""

from arenaplan.reader.tflite_reader import read_model, read_model_bytes

__all__ = ["read_model", "read_model_bytes"]
