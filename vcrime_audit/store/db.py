"""The Store: runs, turns, calls, judgments and patches in one SQLite file.

Each turn is written in one transaction, so a crash loses at most the turn in flight.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from ..canonical import content_hash
from ..engine import TurnRecord
from .migrations import migrate
from .rows import turn_rows

HASHED_TABLES = ("turns", "calls", "judgments", "patches")
LEGACY_HASHED_TABLES = ("turns", "judgments", "patches")
"""What format-1 cassettes' turn-rows hash covered (before the calls table joined it)."""
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

    @contextmanager
    def immediate(self) -> Iterator[None]:
        """One write transaction taken at once (``BEGIN IMMEDIATE``): reads inside it see no
        other writer's changes until it commits."""
        conn = self.db.conn
        if conn.in_transaction:
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.rollback()
            raise
        conn.commit()

    def insert_rows(self, table: str, rows: list[dict[str, Any]], replace: bool = False,
                    ignore: bool = False) -> None:
        self._insert(table, rows, replace, ignore)

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

    def write_turn(self, run_id: str, record: TurnRecord, judge_model: str) -> None:
        """All rows of one turn and the run's turn count (call inside a transaction). The status
        stays ``running`` until the run's finish writes its outcome with its hashes."""
        rows = turn_rows(run_id, record, judge_model)
        for table in RUN_TABLES[1:]:
            self._insert(table, rows[table])
        self.db.conn.execute("UPDATE runs SET turns = ? WHERE run_id = ?", [record.turn, run_id])

    def commit_turn(self, run_id: str, record: TurnRecord, judge_model: str) -> None:
        """:meth:`write_turn` in its own transaction."""
        with self.db.conn:
            self.write_turn(run_id, record, judge_model)

    def clear_run(self, run_id: str) -> None:
        """Delete a run's rows but its ``runs`` row (call inside a transaction)."""
        for table in (*FOLLOWUP_RUN_TABLES, *RUN_TABLES[1:]):
            self.db.conn.execute(f"DELETE FROM [{table}] WHERE run_id = ?", [run_id])

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


def trajectory_rows(store: Store, run_id: str,
                    tables: tuple[str, ...] = HASHED_TABLES) -> dict[str, list[dict[str, Any]]]:
    """Everything a run's trajectory consists of (live judgments only; re-judging does not
    change a trajectory), without its run id."""
    live = {"judgments": "source = 'live'"}
    return {table: [{k: v for k, v in row.items() if k != "run_id"}
                    for row in store.rows(table, run_id, live.get(table, ""))]
            for table in tables}


def turn_rows_hash(store: Store, run_id: str, tables: tuple[str, ...] = HASHED_TABLES) -> str:
    """Hash of :func:`trajectory_rows`: turns, the calls (finish reasons, token counts, times),
    judgments and patches."""
    return content_hash(trajectory_rows(store, run_id, tables))


__all__ = ["Store", "StoreError", "turn_rows_hash"]
