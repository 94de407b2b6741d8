"""The package's measured tables regenerate from their scripts, as shipped.

Each test runs a generator of ``scripts/`` into a temporary folder and compares what
it writes with the data file in ``src/arenaplan/analysis/data``: every entry, and the
header's TFLM bundle, variant and command. Only the names of this machine's tools in
the header (the compiler's and valgrind's version lines) are not compared: a build
with another patch level of the same compiler may count the same, and where it does
not, the entries differ. Needs the native builds (``scripts/build_tflm.py``,
``scripts/build_traffic.py``); without them each test skips naming the command.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from arenaplan.verify.traffic_measure import traffic_available

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "src" / "arenaplan" / "analysis" / "data"
MACHINE = ("compiler", "compilers", "valgrind")  # header fields naming this machine's tools
WHY_NO_TRAFFIC = traffic_available()


def _regenerate(script: str, out: Path) -> dict:
    cmd = [sys.executable, str(REPO / "scripts" / script), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _differences(new: dict, shipped: dict, entries: str) -> list[str]:
    out = [
        f"header {key}: shipped {shipped.get(key)!r}, regenerated {new.get(key)!r}"
        for key in sorted(set(new) | set(shipped))
        if key not in (entries, *MACHINE) and new.get(key) != shipped.get(key)
    ]
    a, b = shipped[entries], new[entries]
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            out.append(f"{name}: only {'regenerated' if name in b else 'shipped'}")
            continue
        for field in sorted(set(a[name]) | set(b[name])):
            was, now = a[name].get(field), b[name].get(field)
            if was != now:
                out.append(f"{name} {field}: shipped {was!r}, regenerated {now!r}")
    return out


@pytest.mark.skipif(WHY_NO_TRAFFIC is not None, reason=f"cannot measure: {WHY_NO_TRAFFIC}")
def test_traffic_fixed_terms_regenerate_as_shipped(tmp_path: Path) -> None:
    name = "traffic_fixed.json"
    new = _regenerate("gen_traffic_fixed.py", tmp_path / name)
    shipped = json.loads((DATA / name).read_text())
    bad = _differences(new, shipped, "paths")
    assert not bad, "\n".join(bad[:20])
