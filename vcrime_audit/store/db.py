"""The Store: runs, turns, calls, judgments and patches in one SQLite file.

Each turn is written in one transaction, so a crash loses at most the turn in flight.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlite_utils

from ..canonical import content_hash
from ..engine import TurnRecord
from .migrations import migrate
from .rows import turn_rows

HASHED_TABLES = ("turns", "judgments", "patches")
RUN_TABLES = ("runs", "turns", "calls", "judgments", "patches", "harm")  # written with each turn
FOLLOWUP_RUN_TABLES = ("rejudged_turns", "annotations", "annotation_results", "interrogations")


class StoreError(Exception):
    pass


class Store:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite_utils.Database(self.path)
            migrate(self.db)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable SQLite store ({exc}); fix: point --db at "
                             "a vcrime-audit store or a new file") from None

    def _insert(self, table: str, rows: list[dict[str, Any]], replace: bool = False,
                ignore: bool = False) -> None:
        if not rows:
            return
        columns = list(rows[0])
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE" if ignore else "INSERT"
        sql = (f"{verb} INTO [{table}] ({', '.join(f'[{c}]' for c in columns)}) "
               f"VALUES ({', '.join('?' for _ in columns)})")
        self.db.conn.executemany(sql, [[row[c] for c in columns] for row in rows])

    def start_run(self, run: dict[str, Any], models: list[dict[str, str]] = ()) -> None:
        """Insert the run row, and the family/vendor of its models for the audits."""
        with self.db.conn:
            self._insert("runs", [run], replace=True)
            self._insert("models", list(models), replace=True)

    def commit_turn(self, run_id: str, record: TurnRecord, judge_model: str) -> None:
        """All rows of one turn, and the run's progress, in a single transaction."""
        rows = turn_rows(run_id, record, judge_model)
        with self.db.conn:
            for table in RUN_TABLES[1:]:
                self._insert(table, rows[table])
            self.db.conn.execute("UPDATE runs SET turns = ?, status = ?, reason = ? WHERE run_id = ?",
                                 [record.turn, record.status, record.reason, run_id])

    def finish_run(self, run_id: str, **fields: Any) -> None:
        with self.db.conn:
            sets = ", ".join(f"[{k}] = ?" for k in fields)
            self.db.conn.execute(f"UPDATE runs SET {sets} WHERE run_id = ?", [*fields.values(), run_id])

    def delete_run(self, run_id: str) -> None:
        with self.db.conn:
            for table in (*FOLLOWUP_RUN_TABLES, *RUN_TABLES[1:], "runs"):
                self.db.conn.execute(f"DELETE FROM [{table}] WHERE run_id = ?", [run_id])

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = list(self.db["runs"].rows_where("run_id = ?", [run_id]))
        return rows[0] if rows else None

    def runs(self) -> list[dict[str, Any]]:
        return list(self.db["runs"].rows_where(order_by="started_at, run_id"))

    def rows(self, table: str, run_id: str, where: str = "") -> list[dict[str, Any]]:
        order = {"turns": "turn", "calls": "turn, seq", "judgments": "turn, judge",
                 "patches": "turn, seq", "harm": "turn"}.get(table, "rowid")
        clause = "run_id = ?" + (f" AND {where}" if where else "")
        return list(self.db[table].rows_where(clause, [run_id], order_by=order))


def turn_rows_hash(store: Store, run_id: str) -> str:
    """Hash of everything a run's trajectory consists of (live judgments only; re-judging does
    not change a trajectory), independent of its run id."""
    live = {"judgments": "source = 'live'"}
    content = {table: [{k: v for k, v in row.items() if k != "run_id"}
                       for row in store.rows(table, run_id, live.get(table, ""))]
               for table in HASHED_TABLES}
    return content_hash(content)


__all__ = ["Store", "StoreError", "turn_rows_hash"]
