"""Hand a plan to its users: the planned `.tflite`, a JSON plan, a terminal summary."""
