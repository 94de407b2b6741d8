"""The project's own `.tflite` writer, and the demo model built with it."""

from arenaplan.builder.demo import DEMO_NAME, demo_model
from arenaplan.builder.writer import ModelBuilder

__all__ = ["DEMO_NAME", "ModelBuilder", "demo_model"]
