"""A store's writer thread: commits transactions on its own connection, off the event loop.

SQLite's commit waits for the write-ahead log's fsync; a study that awaits model calls must not
wait for it on the event loop. Every transaction sent here runs, in order, on one thread that owns
a second connection to the same file (SQLite serialises it with the event loop's connection like
with any other writer; the busy timeout covers the few milliseconds either waits), at the
background priority (:mod:`vcrime_audit.background`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..background import executor

if TYPE_CHECKING:
    from .db import Store

T = TypeVar("T")


class StoreWriter:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._pool = executor("store-writer", 1)
        self._store: Store | None = None

    def _transaction(self, write: Callable[[Store], T], transaction: bool) -> T:
        if self._store is None:
            from .db import Store
            self._store = Store(self.path)
        if not transaction:
            return write(self._store)
        with self._store.db.conn:
            return write(self._store)

    async def commit(self, write: Callable[[Store], T], transaction: bool = True) -> T:
        """Run ``write(store)`` (in one transaction unless ``transaction`` is false) on the
        writer thread; returns its value once committed."""
        return await asyncio.wrap_future(self.submit(write, transaction))

    def submit(self, write: Callable[[Store], T], transaction: bool = True) -> Future[T]:
        """:meth:`commit` from code outside an event loop, not waited for."""
        return self._pool.submit(self._transaction, write, transaction)

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def close(self) -> None:
        """Wait for the transactions sent so far, close the connection and end the thread."""
        self._pool.submit(self._close).result()
        self._pool.shutdown()
