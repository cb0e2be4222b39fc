"""What tables and columns a store must have, given the migrations it says it has applied."""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from .migrations import MIGRATIONS, applied_migrations
from .snapshot import migration_names, snapshot_columns
from .sqlite_utils_without_numpy import sqlite_utils


@lru_cache(maxsize=8)
def expected_schema(applied: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """Table -> columns that the known migrations among ``applied`` create (built in memory)."""
    if applied >= set(migration_names()):
        return snapshot_columns()
    db = sqlite_utils.Database(memory=True)
    for migration in MIGRATIONS:
        if migration.__name__ in applied:
            migration(db)
    return {t: tuple(c.name for c in db[t].columns) for t in db.table_names()}


def schema_problems(conn: sqlite3.Connection) -> list[str]:
    """Missing tables and columns, each with the table (and column) named."""
    done = applied_migrations(conn)
    if done is None:
        return ["it has no _migrations table, so it is not a vcrime-audit store"]
    present: dict[str, set[str]] = {}
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        present[table] = {row[1] for row in conn.execute(f"PRAGMA table_info([{table}])")}
    problems = []
    for table, columns in expected_schema(frozenset(done)).items():
        if table not in present:
            problems.append(f"table '{table}' is missing")
            continue
        problems += [f"column '{table}.{c}' is missing" for c in columns if c not in present[table]]
    return problems
