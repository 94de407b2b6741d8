"""What the scripts that measure the traffic model's tables share (``gen_traffic_*.py``):
their options (``--variant``, ``--out``), the header naming the TFLM bundle, the build's
compiler, valgrind and the command, and writing the table.

A script gives ``table_main`` a function from the variant to the table's fields (each
after the header, in order) and a line saying what it wrote. Exit status: 0 written,
1 the measurements do not give a table (``TableError``), 2 the build is absent.
The scripts put ``src/`` and ``tests/`` on the path before they import it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from arenaplan.tflm.verify.native import bundle_key, variant_dir
from arenaplan.tflm.verify.traffic_measure import traffic_available

REPO = Path(__file__).resolve().parents[1]

DEFAULT_VARIANT = "host-reference"


class TableError(Exception):
    """The measurements do not give the table (said in one line)."""


def header(script: str, variant: str, about: str) -> dict[str, str]:
    """What a table's numbers depend on: the TFLM bundle, the variant, its compiler and
    valgrind's version; and the command that writes it again."""
    build = json.loads((variant_dir(variant) / "build.json").read_text())
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    command = f"python scripts/{script}.py"
    return {
        "about": about,
        "generated_by": command + ("" if variant == DEFAULT_VARIANT else f" --variant {variant}"),
        "tflm_bundle": bundle_key(),
        "variant": variant,
        "compiler": build.get("compiler", "unknown"),
        "valgrind": valgrind.stdout.strip(),
    }


def table_main(
    script: str,
    description: str,
    out: Path,
    about: str,
    measure: Callable[[str], tuple[Mapping[str, object], str]],
    argv: list[str] | None = None,
) -> int:
    """Parse the options, measure (``measure(variant)`` -> the fields after the header,
    and what to say after "wrote OUT"), write the JSON table."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--variant", default=DEFAULT_VARIANT, help="a host variant of build_tflm")
    ap.add_argument("--out", type=Path, default=out, help=f"default: {out.relative_to(REPO)}")
    args = ap.parse_args(argv)
    why = traffic_available(args.variant)
    if why is not None:
        print(f"{script}: {why}", file=sys.stderr)
        return 2
    try:
        fields, said = measure(args.variant)
    except TableError as exc:
        print(f"{script}: {exc}", file=sys.stderr)
        return 1
    doc = {**header(script, args.variant, about), **fields}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}{said}", file=sys.stderr)
    return 0
