"""arenaplan: the memory planner for neural networks on microcontrollers.

Pipeline (each a sub-package, nothing imports upward):
reader -> ir -> analysis -> allocation -> placement -> export / verify, with the
command line (``arenaplan.cli``) on top.
"""

__version__ = "0.1.0"
