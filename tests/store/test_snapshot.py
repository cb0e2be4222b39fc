"""The schema snapshot that new stores are created from is exactly what the migrations build."""

import sqlite3

import sqlite_utils

from vcrime_audit.store import Store
from vcrime_audit.store.migrations import MIGRATIONS
from vcrime_audit.store.schema import expected_schema
from vcrime_audit.store.snapshot import (
    SNAPSHOT_FILE,
    build_snapshot,
    migration_names,
    snapshot_columns,
    snapshot_statements,
)


def dump(path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_the_snapshot_file_is_what_the_migrations_build():
    assert list(snapshot_statements()) == build_snapshot(), (
        f"{SNAPSHOT_FILE.name} is out of date; fix: python -m vcrime_audit.store.snapshot")


def test_a_new_store_equals_one_migrated_step_by_step(tmp_path):
    stepwise = tmp_path / "stepwise.sqlite"
    conn = sqlite3.connect(stepwise)
    conn.execute("CREATE TABLE [_migrations] ([name] TEXT PRIMARY KEY)")  # known, none applied
    conn.commit()
    conn.close()
    Store(stepwise).close()
    Store(tmp_path / "new.sqlite").close()
    assert dump(tmp_path / "new.sqlite") == dump(stepwise)
    names = [row[0] for row in sqlite3.connect(tmp_path / "new.sqlite").execute(
        "SELECT name FROM _migrations ORDER BY rowid")]
    assert names == [m.__name__ for m in MIGRATIONS]


def test_the_expected_columns_of_a_current_store_come_from_the_snapshot():
    db = sqlite_utils.Database(memory=True)
    for migration in MIGRATIONS:
        migration(db)
    built = {t: tuple(c.name for c in db[t].columns) for t in db.table_names()}
    assert snapshot_columns() == built
    assert expected_schema(frozenset(migration_names())) == built
    older = frozenset(migration_names()[:3])
    assert set(expected_schema(older)) < set(built)
