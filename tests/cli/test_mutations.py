"""A mutation run: corrupted real models through the command line, never a traceback.

Seeded random corruptions of the models of ../shared/models (bit flips, zeroed
ranges, inflated vector lengths, flatbuffer offsets pointed elsewhere,
truncation) go through ``plan`` (planned model, JSON, header), ``inspect`` and
``plan --target`` (placement over memories, C++ planner). Every run must end
in success or a clean error: exit 0, 2 (one line) or 3, never the internal-error
guard (70), and no output file left behind by a failed run.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from testkit import MODEL_PATHS

from arenaplan.cli import EXIT_INTERNAL, main

FILES = 300
SEED = 20261123
SMALL = [p for p in MODEL_PATHS if p.stat().st_size < 120_000]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One corruption of ``data`` (the kinds a fuzzer of flatbuffers tries)."""
    b = bytearray(data)
    n = len(b)
    kind = rng.choice(("flip", "zero", "inflate", "offset", "truncate"))
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(n)] ^= 1 << rng.randrange(8)
    elif kind == "zero":
        at, width = rng.randrange(n), rng.randint(1, 64)
        b[at : at + width] = bytes(len(b[at : at + width]))
    elif kind == "inflate":  # a vector length or count made huge
        at = rng.randrange(0, n - 4) & ~3
        value = rng.choice((0x7FFFFFFF, 0xFFFFFFFF, 1 << 20, rng.randrange(1 << 31)))
        b[at : at + 4] = value.to_bytes(4, "little")
    elif kind == "offset":  # a flatbuffer offset pointed somewhere else in the file
        at = rng.randrange(0, n - 4) & ~3
        b[at : at + 4] = (rng.randrange(n) & ~3).to_bytes(4, "little")
    else:
        del b[rng.randrange(8, n) :]
    return bytes(b)


def _argv(k: int, model: Path, out: Path) -> list[str]:
    if k % 3 == 0:
        return [
            "plan",
            str(model),
            "-q",
            *("-o", str(out / "o.tflite"), "--json", str(out / "o.json")),
            *("--header", str(out / "o.h")),
        ]
    if k % 3 == 1:
        return ["inspect", str(model), "--all"]
    return [
        "plan",
        str(model),
        "-q",
        *("--target", "imxrt1170", "--memory", "tcm=16KiB"),
        *("--planner-cpp", str(out / "p.h")),
    ]


@pytest.mark.skipif(not SMALL, reason="../shared/models is absent: no real models to mutate")
def test_corrupted_models_never_give_a_traceback(tmp_path: Path, capsys) -> None:
    rng = random.Random(SEED)
    codes: dict[int, int] = {}
    for k in range(FILES):
        source = rng.choice(SMALL)
        model = tmp_path / f"m{k}.tflite"
        model.write_bytes(mutate(source.read_bytes(), rng))
        out = tmp_path / f"out{k}"
        out.mkdir()
        code = main(_argv(k, model, out))
        err = capsys.readouterr().err
        codes[code] = codes.get(code, 0) + 1
        where = f"file {k} (from {source.name}): {err.strip()}"
        assert code != EXIT_INTERNAL, where
        assert code in (0, 2, 3), where
        assert "Traceback" not in err and err.count("\n") <= 1, where
        if code != 0:
            assert list(out.iterdir()) == [], where
    assert codes.get(0, 0) > 50 and codes.get(2, 0) > 50  # both outcomes are exercised
