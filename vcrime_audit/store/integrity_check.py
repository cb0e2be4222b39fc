"""What is wrong with a store file: SQLite's integrity check (run beside other work and
stoppable) and the schema's."""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .. import __version__
from .connection import connect
from .db import Store
from .errors import sqlite_message
from .migrations import NewerSchemaError, applied_migrations, pending_migrations
from .schema import schema_problems


def integrity_check_lines(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA integrity_check``'s findings, each a line ("integrity_check: ..."); none if sound.
    A file too damaged to be checked (SQLite then raises) is one finding."""
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        if "interrupted" in str(exc):  # IntegrityCheck.cancel
            raise
        return [f"integrity_check: {sqlite_message(exc)}"]
    return [f"integrity_check: {row[0]}" for row in rows if row[0] != "ok"]


def integrity_problems(store: Store | Path | str) -> list[str]:
    """What is wrong with a store file: SQLite's ``PRAGMA integrity_check`` and foreign-key
    check, unknown (newer) migrations, missing tables or columns. Empty when it is sound."""
    path = store.path if isinstance(store, Store) else Path(store)
    try:
        conn = store.db.conn if isinstance(store, Store) else connect(path, readonly=True)
    except sqlite3.DatabaseError as exc:
        return [f"{path}: cannot be opened ({exc})"]
    try:
        problems = integrity_check_lines(conn)
        problems += [f"foreign_key_check: {table} row {rowid} points at a missing {parent} row"
                     for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")]
        try:
            pending_migrations(applied_migrations(conn))
        except NewerSchemaError as exc:
            problems.append(f"schema: migration(s) {exc} unknown to version {__version__}")
        problems += schema_problems(conn)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        problems = [f"not a usable SQLite store ({sqlite_message(exc)})"]
    finally:
        if not isinstance(store, Store):
            conn.close()
    return problems


class IntegrityCheck:
    """SQLite's ``PRAGMA integrity_check`` of a store, started on a thread and a connection of its
    own: ~6 s for the 960-run store (790 MB), which SQLite spends without the interpreter lock,
    so :meth:`Verifier.store` runs it while the runs are verified, not before them on one core.
    :meth:`cancel` stops it, so a verify that fails or is stopped does not wait for it."""

    PROGRESS_STEPS = 10_000
    """SQLite virtual-machine steps between two looks at the cancel flag (~1 ms of the check)."""

    def __init__(self, db: Path) -> None:
        self._cancelled = threading.Event()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="integrity-check")
        self._problems = self._pool.submit(self._check, db)

    def _check(self, db: Path) -> list[str]:
        store = Store.open_existing(db)
        try:
            store.db.conn.set_progress_handler(self._cancelled.is_set, self.PROGRESS_STEPS)
            return integrity_check_lines(store.db.conn)
        finally:
            store.close()

    def result(self) -> list[str]:
        """The problems found (each a line); waits for the check to end."""
        try:
            return self._problems.result()
        finally:
            self._pool.shutdown()

    def cancel(self) -> None:
        """Stop the check: the statement aborts at its next progress look (raising "interrupted"
        on its thread), or never starts. Returns once its thread has closed its connection (a
        millisecond or so): a command that fails here must hold no file open when it returns."""
        self._cancelled.set()
        self._pool.shutdown(wait=True, cancel_futures=True)
