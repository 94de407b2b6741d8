"""Measured memory traffic: TFLM's kernels run under the ``arenatraffic`` valgrind tool.

``scripts/build_traffic.py`` builds, for a host variant of ``scripts/build_tflm.py``,
``native/traffic_runner.cc`` against that variant's TFLM library and the valgrind tool
``native/traffic_tool.c``. :func:`measure_traffic` runs a model once (after one
uncounted invoke) under the tool and returns, for every operator, the loads and
stores of every address range it touched, attributed by address to the tensor,
kernel scratch buffer or persistent block that owns it (the keys of
:mod:`arenaplan.cost.traffic`). Counts are exact for that build: every access
the simulated CPU makes, by the width of the access.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from arenaplan.cost.traffic import Key, Traffic
from arenaplan.errors import RuntimeUnavailableError
from arenaplan.tflm.verify.native import VARIANTS, variant_dir

BUILD_COMMAND = (
    "python scripts/build_tflm.py --variants {v} && python scripts/build_traffic.py --variant {v}"
)
TIMEOUT = 1800  # seconds for one model under valgrind
_WIDTHS = (1, 2, 4, 8, 16, 32, 0)  # the tool's width classes; 0 = any other width


def traffic_dir(variant: str = "host-reference", root: Path | None = None) -> Path:
    return variant_dir(variant, root) / "traffic"


def traffic_available(variant: str = "host-reference", root: Path | None = None) -> str | None:
    """None when the measurement can run here, else why not (naming the build commands)."""
    if variant not in VARIANTS or VARIANTS[variant].arm32:
        return f"traffic is measured on host variants only, not {variant!r}"
    if shutil.which("valgrind") is None:
        return "valgrind is absent: apt-get install valgrind"
    d = traffic_dir(variant, root)
    tool = d / "valgrind" / "arenatraffic-amd64-linux"
    if not (d / "traffic_runner").is_file() or not tool.is_file():
        return f"the traffic runner is not built at {d}: " + BUILD_COMMAND.format(v=variant)
    return None


@dataclass(frozen=True, slots=True)
class MeasuredOp:
    """One operator's measured traffic: ``name`` as TFLM registers it, per key."""

    subgraph: int
    op: int
    name: str
    traffic: dict[Key, Traffic]


def _key(raw: list) -> Key:
    if raw[0] == "tensor":
        return (int(raw[1]), int(raw[2]))
    return tuple(raw)


def parse(layout: dict, counts_text: str) -> dict[tuple[int, int], MeasuredOp]:
    """The tool's output (``B``/``R``/``E`` lines) and the runner's layout -> per operator."""
    keys = {r["id"]: _key(r["key"]) for r in layout["ranges"]}
    keys[-1] = ("other",)
    ops = {o["id"]: o for o in layout["ops"]}
    acc: dict[int, dict[Key, Traffic]] = {}
    current = None
    for line in counts_text.splitlines():
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "B":
            current = int(parts[1])
            acc.setdefault(current, {})
        elif parts[0] == "E":
            current = None
        elif parts[0] == "R" and current is not None:
            key = keys[int(parts[1])]
            counts = [int(x) for x in parts[3:10]]
            widths = tuple((w, n) for w, n in zip(_WIDTHS, counts, strict=True) if n)
            nbytes = int(parts[10])
            if parts[2] == "L":
                t = Traffic(sum(counts), 0, nbytes, 0, load_widths=widths)
            else:
                t = Traffic(0, sum(counts), 0, nbytes, store_widths=widths)
            per = acc[current]
            per[key] = per[key] + t if key in per else t
    out = {}
    for oid, o in ops.items():
        sg, op = o["subgraph"], o["op"]
        out[(sg, op)] = MeasuredOp(sg, op, o["name"], acc.get(oid, {}))
    return out


def measure_traffic(
    model: Path | bytes,
    variant: str = "host-reference",
    root: Path | None = None,
    timeout: float = TIMEOUT,
) -> dict[tuple[int, int], MeasuredOp]:
    """Run ``model`` once under valgrind and return the traffic of every operator.

    Raises ``RuntimeUnavailableError`` when the build is absent, ``RuntimeError`` with
    the runner's last line when TFLM refuses the model or the run fails."""
    why = traffic_available(variant, root)
    if why is not None:
        raise RuntimeUnavailableError(why)
    d = traffic_dir(variant, root)
    with tempfile.TemporaryDirectory(prefix="arenaplan-traffic-") as tmp:
        tmpdir = Path(tmp)
        if isinstance(model, bytes):
            path = tmpdir / "model.tflite"
            path.write_bytes(model)
        else:
            path = Path(model)
        layout_path, counts_path = tmpdir / "layout.json", tmpdir / "counts.txt"
        env = dict(os.environ, VALGRIND_LIB=str(d / "valgrind"))
        cmd = ["valgrind", "--tool=arenatraffic", f"--out={counts_path}", "-q"]
        cmd += [str(d / "traffic_runner"), str(path), "--layout", str(layout_path)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        if done.returncode != 0 or not layout_path.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise RuntimeError(f"traffic run failed (exit status {done.returncode}): {last}")
        layout = json.loads(layout_path.read_text())
        return parse(layout, counts_path.read_text())
