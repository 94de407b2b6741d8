#!/usr/bin/env bash
# The native TFLM lane: what the tests that run TFLM built from source need.
#
#   bash scripts/native_lane.sh [VARIANTS]     # default: every variant CI builds
#
# 1. Debian packages, by name (apt-get as root; otherwise it says what to install);
# 2. numpy and pillow in the active Python (TFLM's Makefile runs python3 with them);
# 3. TFLM from ../shared/third_party, each variant (scripts/build_tflm.py), cached
#    outside the clone in ~/.cache/arenaplan/tflm/<bundle hash>/: a second run on the
#    machine rebuilds nothing;
# 4. the valgrind traffic tool and runner (scripts/build_traffic.py);
# 5. the ExecuTorch lane (scripts/executorch_lane.sh): its runtime and exported programs.
# Then `python -m pytest -q` runs the native tests too. Run from the clone's root,
# in the virtual environment the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."

VARIANTS=${1:-host-reference,host-cmsis_nn,arm32-reference,arm32-cmsis_nn,arm32-int32-reference,m55-cmsis_nn}
PACKAGES=(make g++ xxd binutils valgrind qemu-user qemu-system-arm
          gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib)

missing=()
for package in "${PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "native lane: install these Debian packages first: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
    echo "native lane: apt-get install ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python -c "import numpy, PIL" 2>/dev/null || python -m pip install --quiet numpy pillow
start=$SECONDS
python scripts/build_tflm.py --variants "$VARIANTS"
python scripts/build_traffic.py
echo "native lane: builds ready in $((SECONDS - start)) s"
bash scripts/executorch_lane.sh
