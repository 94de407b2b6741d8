"""Synthetic MicroProfiler logs from known target parameters (calibration tests)."""

from __future__ import annotations

from dataclasses import replace

from arenaplan.targets import load_builtin as load_target

VWW = "mlcommons-tiny__vww_96_int8"


def true_target():
    """xcore.ai with known, made-up parameters: what the profiles come from."""
    base = load_target("xcore_ai")
    rates = {"conv": 0.37, "depthwise": 0.21, "fully_connected": 0.5, "elementwise": 0.8}
    mems = tuple(
        replace(m, latency={"sram": 1.5, "lpddr": 23.0}.get(m.name, m.latency))
        for m in base.memories
    )
    mems = tuple(replace(m, write_latency=9.0) if m.name == "lpddr" else m for m in mems)
    return replace(base, macs_per_cycle=rates | {"default": 0.3}, memories=mems)


def placement(model, memory: str) -> dict:
    """Everything in ``memory``, weights included (xcore.ai's SRAM may hold them)."""
    return {(sg.index, t.index): memory for sg in model.subgraphs for t in sg.tensors}


def log_text(cycles, fmt: str, invocations: int = 2) -> str:
    lines = ["some application output", "MicroInterpreter ready"]
    if fmt == "log":
        for _ in range(invocations):
            lines += [f"{c.op.opcode} took {round(c.total)} ticks (0 ms)." for c in cycles]
    elif fmt == "csv":
        lines.append('"Event","Tag","Ticks"')
        events = [c for _ in range(invocations) for c in cycles]
        lines += [f"{i},{c.op.opcode},{round(c.total)}" for i, c in enumerate(events)]
    else:
        lines.append('"Unique Tag","Total ticks across all events with that tag."')
        totals: dict[str, float] = {}
        for c in cycles:
            totals[c.op.opcode] = totals.get(c.op.opcode, 0.0) + c.total
        lines += [f"{tag}, {round(t)}" for tag, t in totals.items()]
        lines.append(f'"total number of ticks", {round(sum(totals.values()))}')
    return "\n".join(lines)
