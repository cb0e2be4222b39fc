"""The schema that all migrations build, kept as SQL (``schema.sql``) so a new store is created
by a handful of statements instead of nine migrations' worth of sqlite-utils introspection.

``python -m vcrime_audit.store.snapshot`` writes the file again after a migration is added; a
test checks that the file is what the migrations build, statement for statement.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from pathlib import Path

from .migrations import MIGRATIONS
from .sqlite_utils_without_numpy import sqlite_utils

SNAPSHOT_FILE = Path(__file__).with_name("schema.sql")
SEPARATOR = ";\n"


def build_snapshot() -> list[str]:
    """The ``CREATE`` statements of every table and index the migrations make, in order."""
    db = sqlite_utils.Database(memory=True)
    for migration in MIGRATIONS:
        migration(db)
    return [sql for (sql,) in db.conn.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")]


@lru_cache(maxsize=1)
def snapshot_statements() -> tuple[str, ...]:
    text = SNAPSHOT_FILE.read_text(encoding="utf-8")
    return tuple(s for s in text.split(SEPARATOR) if s.strip())


def migration_names() -> tuple[str, ...]:
    return tuple(m.__name__ for m in MIGRATIONS)


@lru_cache(maxsize=1)
def snapshot_columns() -> dict[str, tuple[str, ...]]:
    """Table -> columns of a store with every migration applied (read from the snapshot)."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in snapshot_statements():
            conn.execute(statement)
        tables = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "ORDER BY rowid")]
        return {t: tuple(row[1] for row in conn.execute(f"PRAGMA table_info([{t}])")) for t in tables}
    finally:
        conn.close()


def write_snapshot(path: Path = SNAPSHOT_FILE) -> None:
    path.write_text(SEPARATOR.join(build_snapshot()) + SEPARATOR, encoding="utf-8")


if __name__ == "__main__":
    write_snapshot()
    print(f"wrote {SNAPSHOT_FILE} ({len(build_snapshot())} statements)")
