"""Reading `.tflite` files into the IR."""

from arenaplan.reader.tflite_reader import load_model, read_model, read_model_bytes

__all__ = ["load_model", "read_model", "read_model_bytes"]
