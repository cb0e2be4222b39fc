"""Copies of a finished store in which some runs are not finished yet: as a store looks while a
study plays them, or after they crashed."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path


def run_tables(conn: sqlite3.Connection) -> list[str]:
    """The tables with a run_id column, but ``runs``."""
    tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [t for t in tables if t != "runs"
            and "run_id" in {c[1] for c in conn.execute(f"PRAGMA table_info([{t}])")}]


def unfinish(finished: Path, path: Path, cut: dict[str, int], status: str = "running") -> None:
    """A copy of ``finished`` at ``path`` in which each run of ``cut`` has ``status``, with its
    turns after the given one not written."""
    shutil.copyfile(finished, path)
    conn = sqlite3.connect(path)
    try:
        for run_id, turn in cut.items():
            for table in run_tables(conn):
                columns = {c[1] for c in conn.execute(f"PRAGMA table_info([{table}])")}
                where = "run_id = ?" + (" AND turn > ?" if "turn" in columns else "")
                conn.execute(f"DELETE FROM [{table}] WHERE {where}",
                             [run_id, turn] if "turn" in columns else [run_id])
            conn.execute("UPDATE runs SET status = ?, turns = ? WHERE run_id = ?", [status, turn, run_id])
        conn.commit()
    finally:
        conn.close()  # the last connection: folds the log into the file, which is then copied
