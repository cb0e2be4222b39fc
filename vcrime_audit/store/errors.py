"""What goes wrong with a store, as one line that names it and the fix."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import __version__
from .connection import BUSY_TIMEOUT_S, UnreadableLog
from .migrations import NewerSchemaError


class StoreError(Exception):
    pass


DAMAGED_FIX = ("fix: check it with `vcrime-audit verify`, restore it from a copy, or replay its "
               "cassettes into a new store")


def sqlite_message(exc: BaseException) -> str:
    """What SQLite said. Python raises UnicodeDecodeError in place of SQLite's error when the
    message is not UTF-8: a damaged schema's message quotes the damaged bytes."""
    if isinstance(exc, UnicodeDecodeError) and isinstance(exc.object, bytes):
        return exc.object.decode("utf-8", "replace")
    return str(exc)


def store_error(path: object, exc: BaseException, what: str = "cannot be read or written") -> StoreError:
    """What SQLite raised while a store was read or written, as one line naming the store and the
    fix: a lock held too long, a full disk, or (anything else) a damaged file."""
    message = sqlite_message(exc)
    if "locked" in message or "busy" in message:
        return StoreError(f"{path}: another process held it locked for {BUSY_TIMEOUT_S:g} s "
                          f"({message}); fix: let that process finish, or use another store")
    if "disk is full" in message:
        return StoreError(f"{path}: {what} ({message}); fix: free disk space where it lies and "
                          "run the command again")
    return StoreError(f"{path}: {what} ({message}); {DAMAGED_FIX}")


@contextmanager
def opening_errors(path: Path) -> Iterator[None]:
    """What opening, checking and migrating the store at ``path`` raises, as one
    :class:`StoreError` line naming it."""
    try:
        yield
    except NewerSchemaError as exc:
        raise StoreError(f"{path}: written by a newer vcrime-audit (schema migration(s) {exc} "
                         f"unknown to version {__version__}); fix: upgrade vcrime-audit, or use "
                         "another store") from None
    except UnreadableLog as exc:
        raise StoreError(f"{path}: {exc}") from None
    except (sqlite3.DatabaseError, OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: not a usable SQLite store ({sqlite_message(exc)}); fix: point "
                         "--db at a vcrime-audit store or a new file") from None
