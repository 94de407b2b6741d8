"""Sweep results that last: one SQLite file, one row per task, keyed by the task.

SQLite (Python's own ``sqlite3``, no dependency) because rows arrive one at a time
from many workers and each must be safe on disk when it arrives: every insert is
its own transaction, so a sweep killed at any point keeps every finished row and
no half row, and a rerun asks the store which keys are done and skips them. A
columnar file (Parquet) would have to be rewritten or split per row to get the
same; the tables a sweep produces (thousands of rows) are small for SQLite, and
the report reads them whole.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from arenaplan.errors import UsageError
from arenaplan.explore.tasks import COLUMNS

FILE = "results.sqlite"  # in the sweep's output folder
_NAMES = [name for name, _ in COLUMNS]


class Store:
    """The results of one sweep folder (created when absent)."""

    def __init__(self, folder: Path, create: bool = True) -> None:
        path = folder / FILE
        if not create and not path.exists():
            raise UsageError(f"{folder}: no sweep results there ({FILE} is absent)")
        new = not path.exists()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path)
            columns = ", ".join(f"{n} {t}" for n, t in COLUMNS)
            self.db.execute(f"CREATE TABLE IF NOT EXISTS results ({columns})")
            self.db.commit()
        except (OSError, sqlite3.Error) as exc:
            if new:  # a results file that cannot be used is not left behind
                path.unlink(missing_ok=True)
            raise UsageError(f"{path}: cannot open the results: {exc}") from None
        self.path = path

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done(self) -> set[str]:
        """Keys of the tasks already recorded (finished or failed)."""
        return {k for (k,) in self.db.execute("SELECT key FROM results")}

    def add(self, row: dict[str, Any]) -> None:
        """Record one row, at once (a row already there is kept)."""
        marks = ", ".join("?" for _ in _NAMES)
        self.db.execute(
            f"INSERT OR IGNORE INTO results ({', '.join(_NAMES)}) VALUES ({marks})",
            [row.get(n) for n in _NAMES],
        )
        self.db.commit()

    def failed(self, keys: set[str]) -> dict[str, str]:
        """The failed tasks among ``keys``: key -> its one-line error."""
        cur = self.db.execute("SELECT key, error FROM results WHERE status = 'failed'")
        return {k: e or "" for k, e in cur if k in keys}

    def forget_failed(self) -> int:
        """Drop the failed rows (to run them again); how many."""
        n = self.db.execute("DELETE FROM results WHERE status = 'failed'").rowcount
        self.db.commit()
        return n

    def rows(self) -> list[dict[str, Any]]:
        """Every row, ordered by key (a stable order whatever the finishing order)."""
        cur = self.db.execute(f"SELECT {', '.join(_NAMES)} FROM results ORDER BY key")
        return [dict(zip(_NAMES, r, strict=True)) for r in cur]
