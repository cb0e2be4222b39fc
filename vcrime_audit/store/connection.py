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


class UnreadableLog(sqlite3.OperationalError):
    """A store whose write-ahead log cannot be read where it lies (see :func:`_reader`)."""


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
        try:
            _set_wal(conn)  # the first read of the file: raises if it is no SQLite database
            conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn
    return _reader(path)


def _reader(path: Path) -> sqlite3.Connection:
    """A connection that reads a store as committed, while other processes may write it.

    SQLite's ``immutable`` flag (no locks, no look at the write-ahead log) would read pages a
    writer is checkpointing into the file: "database disk image is malformed", or rows of two
    moments. So a store is opened read-write with ``query_only`` (SQLite refuses every write),
    which also removes the -wal and -shm files it needs once it closes last; where the file cannot
    be written, read-only (which may leave those files behind); only where SQLite cannot make the
    -shm file either (a read-only file system), immutable, and then only with no write-ahead log
    beside the file, whose commits it would not see."""
    base = path.resolve().as_uri()
    for query in ("mode=rw", "mode=ro"):
        conn = sqlite3.connect(f"{base}?{query}", uri=True, timeout=BUSY_TIMEOUT_S,
                               factory=StoreConnection)
        try:
            conn.execute("PRAGMA query_only=ON")
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the log too
            return conn
        except BaseException as exc:  # a damaged schema's message may not even decode
            conn.close()
            if not isinstance(exc, sqlite3.OperationalError) or "unable to open" not in str(exc):
                raise
    if Path(f"{path}-wal").exists():
        raise UnreadableLog(f"its write-ahead log {path.name}-wal holds commits that SQLite reads "
                            "only where it can write beside the store; fix: copy the store and "
                            "its -wal file together to a writable folder")
    return sqlite3.connect(f"{base}?mode=ro&immutable=1", uri=True, factory=StoreConnection)


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
