"""arenaplan: the memory planner for neural networks on microcontrollers.

Pipeline (each a sub-package; imports follow one order, none upward, no cycle):
reader -> ir -> analysis -> passes -> allocation -> placement -> weights -> export,
beside them cost and targets; the pipeline (``pipeline.run_plan``) and the command line
(``arenaplan.cli``, ``commands``) on top. What a runtime does to memory and how a plan
is written and proven in it sit behind ``runtime`` (the interface and the registry);
``tflm`` is the first runtime package. ``docs/architecture.md`` is the full map.
"""

__version__ = "0.1.0"
