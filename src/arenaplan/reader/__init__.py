"""Reading model files (``.tflite``, ExecuTorch's ``.pte``) into the IR."""

from arenaplan.reader.dispatch import load_model, read_model, read_model_bytes

__all__ = ["load_model", "read_model", "read_model_bytes"]
