"""Connections to a store's SQLite file, or to a store in memory."""

from __future__ import annotations

import sqlite3
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

from .migrations import migrate
from .schema import schema_problems
from .sqlite_utils_without_numpy import sqlite_utils

BUSY_TIMEOUT_S = 30.0
IN_MEMORY = ":memory:"
"""What SQLite takes for a database in memory, as a path: never a store's file (its rows would
be lost on close), only :meth:`Store.in_memory`'s."""


class StoreConnection(sqlite3.Connection):
    """A connection whose commits can be held back, so several migrations (each using
    sqlite-utils, which commits as it goes) form one transaction."""

    hold = False

    def commit(self) -> None:
        if not self.hold:
            super().commit()

    def __exit__(self, *exc: Any) -> Any:
        if self.hold:
            return False
        return super().__exit__(*exc)


def _set_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, waiting like a busy timeout: while other processes open the
    same new file, SQLite answers "database is locked" at once, without its busy handler."""
    deadline, pause = time.monotonic() + BUSY_TIMEOUT_S, 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def connect(path: Path, readonly: bool, in_memory: bool = False) -> sqlite3.Connection:
    if in_memory:
        conn = sqlite3.connect(IN_MEMORY, factory=StoreConnection)
        with _TEMPLATE_LOCK:
            _memory_template().backup(conn)
        return conn
    if not readonly:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, factory=StoreConnection)
        _set_wal(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn
    # A read-only connection to a WAL store would leave -wal and -shm files behind; when no
    # writer has the store open (no -wal file) it is opened as immutable, which creates nothing.
    idle = not Path(f"{path}-wal").exists()
    uri = f"{path.resolve().as_uri()}?mode=ro" + ("&immutable=1" if idle else "")
    return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, factory=StoreConnection)


_TEMPLATE_LOCK = threading.Lock()


@cache
def _memory_template() -> sqlite3.Connection:
    """An empty store in memory, its tables made by the migrations and schema-checked once per
    process: a new store in memory is a copy of it (SQLite's backup), 0.27 ms against 2.06 ms made
    table by table and checked (``Store.in_memory``, measured; one per run ``verify``
    re-derives). Only one thread uses it at a time (``_TEMPLATE_LOCK``)."""
    conn = sqlite3.connect(IN_MEMORY, factory=StoreConnection, check_same_thread=False)
    migrate(sqlite_utils.Database(conn))
    conn.commit()
    problems = schema_problems(conn)
    if problems:  # the migrations and the schema they are checked against disagree: a bug here
        raise RuntimeError(f"the migrations make a store that fails its own schema check: {problems[0]}")
    return conn
