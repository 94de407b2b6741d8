"""Where TFLM's builds are looked for (``verify.native.build_root``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from arenaplan.tflm.verify import native


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ARENAPLAN_TFLM_BUILD", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    builds = tmp_path / "arenaplan" / "tflm"
    builds.mkdir(parents=True)
    return builds


def test_the_bundle_beside_the_clone_names_the_builds(cache: Path, monkeypatch) -> None:
    monkeypatch.setattr(native, "bundle_key", lambda: "0123456789abcdef")
    (cache / "fedcba9876543210").mkdir()
    assert native.build_root() == cache / "0123456789abcdef"


def test_installed_away_from_the_clone_uses_the_one_bundle_built(cache: Path, monkeypatch) -> None:
    monkeypatch.setattr(native, "bundle_key", lambda: "no-bundle")
    (cache / "fedcba9876543210").mkdir()
    assert native.build_root() == cache / "fedcba9876543210"
    (cache / "0123456789abcdef").mkdir()  # two bundles built: no guess
    assert native.build_root() == cache / "no-bundle"


def test_the_variable_wins(cache: Path, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ARENAPLAN_TFLM_BUILD", str(tmp_path / "mine"))
    assert native.build_root() == tmp_path / "mine"
