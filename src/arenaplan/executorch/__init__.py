"""ExecuTorch as a runtime of the planner: its ``.pte`` programs planned, checked and
written back (``runtime.ExecuTorch``).

- ``storage``: what the program's own plan says beyond offsets: which values are
  views of another's bytes (ExecuTorch writes no instruction for a view) and which
  hold state across calls (mutable buffers).
- ``lifetimes``: one step per instruction, each method in steps of its own.
- ``simulate``: the independent check of a plan: the program's instructions run
  twice over symbolic bytes, under the program's own plan and under the new one;
  every read must see the same bytes.
- ``order``: what a new order of a method's instructions must keep (``reorder``),
  and a chain's instructions written in a new order, everything else byte for byte.
- ``write``: the new ``allocation_info`` and pool sizes patched into the program,
  everything else byte for byte.
"""

from arenaplan.executorch.export_time import memory_planning_algo

__all__ = ["memory_planning_algo"]
