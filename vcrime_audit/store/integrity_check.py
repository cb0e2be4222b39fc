"""SQLite's integrity check of a store, run beside other work and stoppable."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .db import Store, integrity_check_lines


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
        on its thread), or never starts."""
        self._cancelled.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
