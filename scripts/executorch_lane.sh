#!/usr/bin/env bash
# The ExecuTorch lane: what the tests that plan and run .pte programs need.
#
#   bash scripts/executorch_lane.sh
#
# 1. ExecuTorch's C++ runtime in the active Python: the executorch wheel without its
#    dependencies (headers and libraries; no torch), for arenaplan's runner
#    (src/arenaplan/executorch/runner/, built by g++ on first use);
# 2. programs exported by ExecuTorch itself (scripts/export_pte.py), in an environment
#    of their own with torch (the CPU build) and executorch, both cached outside the
#    clone in ~/.cache/arenaplan/executorch/: a second run on the machine redoes nothing.
# Run from the clone's root, in the virtual environment the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

WHEEL=executorch==1.5.1
TORCH=torch==2.13.0
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/arenaplan/executorch
VENV=$CACHE/export-venv
OUT=$CACHE/pte/$(sha256sum scripts/export_pte.py | cut -c1-16)
start=$SECONDS

python -c "import importlib.util as u, sys; sys.exit(u.find_spec('executorch') is None)" 2>/dev/null ||
    python -m pip install --quiet --no-deps "$WHEEL"

if [ ! -f "$OUT/done" ]; then
    if ! "$VENV/bin/python" -c "import torch, executorch.exir" 2>/dev/null; then
        python -m venv --clear "$VENV"
        "$VENV/bin/python" -m pip install --quiet "$WHEEL" "$TORCH"
    fi
    # arenaplan's own dependencies: export_pte.py imports arenaplan from this clone
    core=$(python -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))")
    # shellcheck disable=SC2086 # one argument per requirement
    "$VENV/bin/python" -m pip install --quiet $core
    rm -rf "$OUT.tmp" && mkdir -p "$OUT.tmp"
    "$VENV/bin/python" scripts/export_pte.py "$OUT.tmp" > "$OUT.tmp/export.log" 2>&1 ||
        { tail -20 "$OUT.tmp/export.log" >&2; exit 1; }
    touch "$OUT.tmp/done" && rm -rf "$OUT" && mv "$OUT.tmp" "$OUT"
fi
echo "executorch lane: programs in $OUT, ready in $((SECONDS - start)) s"
