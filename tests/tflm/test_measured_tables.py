"""The package's measured tables regenerate from their scripts, as shipped.

Each test runs a generator of ``scripts/`` into a temporary folder and compares what
it writes with the data file in ``src/arenaplan/tflm/data`` or ``cost/data``: every entry, and the
header's TFLM bundle, variant, profiles and command. Only the names of this machine's
tools in the header are not compared (the compilers', valgrind's and the PyPI wheel's
version lines): another patch level of a tool may give the same figures, and where it
does not, the entries differ. Needs the native builds (``scripts/build_tflm.py``,
``scripts/build_traffic.py``) and arm-none-eabi-g++; without them each test skips
naming the command. The traffic table takes under a minute, the struct sizes two to
four (two compilers at once).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arenaplan.tflm.verify.instructions import instructions_available
from arenaplan.tflm.verify.native import native_available
from arenaplan.tflm.verify.traffic_measure import traffic_available

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "arenaplan"
# header fields naming this machine's tools
MACHINE = ("compiler", "compilers", "valgrind", "wheel")
WHY_NO_TRAFFIC = traffic_available()
# the TFLM tree with CMSIS-NN's headers comes with the host-cmsis_nn build
WHY_NO_PROBES = native_available("host-cmsis_nn") or (
    None
    if shutil.which("arm-none-eabi-g++")
    else "arm-none-eabi-g++ is absent: apt-get install gcc-arm-none-eabi"
)


def _regenerate(script: str, out: Path) -> dict:
    cmd = [sys.executable, str(REPO / "scripts" / script), "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)  # seconds
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _differences(new: dict, shipped: dict, tables: tuple[str, ...]) -> list[str]:
    """Every header field and table entry (name -> field -> value) that differs."""
    out = [
        f"header {key}: shipped {shipped.get(key)!r}, regenerated {new.get(key)!r}"
        for key in sorted(set(new) | set(shipped))
        if key not in (*tables, *MACHINE) and new.get(key) != shipped.get(key)
    ]
    for table in tables:
        a, b = shipped[table], new[table]
        for name in sorted(set(a) | set(b)):
            if name not in a or name not in b:
                out.append(f"{table} {name}: only {'regenerated' if name in b else 'shipped'}")
                continue
            for field in sorted(set(a[name]) | set(b[name])):
                was, now = a[name].get(field), b[name].get(field)
                if was != now:
                    out.append(f"{table} {name} {field}: shipped {was!r}, regenerated {now!r}")
    return out


@pytest.mark.skipif(WHY_NO_TRAFFIC is not None, reason=f"cannot measure: {WHY_NO_TRAFFIC}")
def test_traffic_fixed_terms_regenerate_as_shipped(tmp_path: Path) -> None:
    name = "traffic_fixed.json"
    new = _regenerate("gen_traffic_fixed.py", tmp_path / name)
    shipped = json.loads((PACKAGE / "cost" / "data" / name).read_text())
    bad = _differences(new, shipped, ("paths",))
    assert not bad, "\n".join(bad[:20])


@pytest.mark.skipif(WHY_NO_PROBES is not None, reason=f"cannot probe: {WHY_NO_PROBES}")
def test_tail_struct_sizes_regenerate_as_shipped(tmp_path: Path) -> None:
    name = "tail_structs.json"
    new = _regenerate("gen_tail_structs.py", tmp_path / name)
    shipped = json.loads((PACKAGE / "tflm" / "data" / name).read_text())
    bad = _differences(new, shipped, ("options", "state"))
    assert not bad, "\n".join(bad[:20])


# the cascade steps' table: each kernel set whose build is here, regenerated alone
CASCADE_STEP_BUILDS = {"cmsis_nn": "host-cmsis_nn", "cmsis_nn+dsp": "arm32-cmsis_nn",
                       "cmsis_nn+mve": "m55-cmsis_nn"}  # fmt: skip


def _step_sets() -> list[str]:
    return [k for k, v in CASCADE_STEP_BUILDS.items() if instructions_available(v) is None]


@pytest.mark.skipif(not _step_sets(), reason="no CMSIS-NN build to count instructions in")
def test_cascade_step_costs_regenerate_as_shipped(tmp_path: Path) -> None:
    """scripts/gen_cascade_steps.py, for every kernel set whose build is here (a few
    minutes): the coefficients, the fit's report and the rate per MAC equal the
    shipped ones, each set's variant and counter too."""
    name = "cascade_steps.json"
    sets = _step_sets()
    out = tmp_path / name
    cmd = [sys.executable, str(REPO / "scripts" / "gen_cascade_steps.py"), "--out", str(out)]
    done = subprocess.run([*cmd, "--kernels", ",".join(sets)], capture_output=True, text=True,
                          timeout=3600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    new = json.loads(out.read_text())
    shipped = json.loads((PACKAGE / "tflm" / "data" / name).read_text())
    assert {k: new[k] for k in ("about", "generated_by", "tflm_bundle")} == {
        k: shipped[k] for k in ("about", "generated_by", "tflm_bundle")
    }
    for kernels in sets:
        was, now = shipped["kernels"][kernels], new["kernels"][kernels]
        for field in sorted(set(was) | set(now)):
            if field in ("coefficients", "fit", "mac_instructions"):
                _same_fit({field: was.get(field, {})}, {field: now.get(field, {})}, kernels)
            elif field not in MACHINE and field != "compiler":
                assert now.get(field) == was.get(field), f"{kernels} {field}"


# a fitted number regenerates within these (its last digit may round the other way
# where the fit's round-off moves it; a term left out is 0)
FIT_REL, FIT_ABS = 0.01, 0.01


def _same_fit(was: dict[str, object], now: dict[str, object], what: str) -> None:
    for key in sorted(set(was) | set(now)):
        a, b = was.get(key, 0.0), now.get(key, 0.0)
        if isinstance(a, dict) and isinstance(b, dict):
            _same_fit(a, b, f"{what} {key}")
        elif isinstance(a, str) or isinstance(b, str):
            assert a == b, f"{what} {key}"
        else:
            assert b == pytest.approx(a, rel=FIT_REL, abs=FIT_ABS), f"{what} {key}"
