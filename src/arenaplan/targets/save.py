"""Write a target back as TOML, in the format ``targets.load`` reads (all fields)."""

from __future__ import annotations

import dataclasses
from typing import Any

from arenaplan.runtime.spec import KernelSet, Profile
from arenaplan.targets.model import Target

_KEYS = {"profile": "tflm_profile"}  # field -> the TOML key ``targets.load`` reads


def _plain(value: object) -> object:
    """A kernel set or a build profile as its spelling; anything else as it is."""
    return str(value) if isinstance(value, KernelSet | Profile) else value


def target_to_dict(target: Target) -> dict[str, Any]:
    """The TOML tables of ``target``; sizes in bytes, rates and latencies as numbers."""
    top = {
        _KEYS.get(f.name, f.name): _plain(getattr(target, f.name))
        for f in dataclasses.fields(target)
        if f.name not in ("memories", "macs_per_cycle")
    }
    memories = []
    for m in target.memories:
        table = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
        table["holds"] = list(m.holds)
        memories.append({k: v for k, v in table.items() if v != "" or k == "section"})
    return top | {"compute": dict(sorted(target.macs_per_cycle.items())), "memory": memories}


def target_to_toml(target: Target, header: str = "") -> str:
    """TOML text of ``target``; ``header``: comment lines put first (each with '# ')."""
    import tomli_w

    comments = "".join(f"# {line}\n" for line in header.splitlines())
    return comments + tomli_w.dumps(target_to_dict(target))
