"""Migration m004 adds the follow-up tables once, also to a store made before it existed."""

import sqlite_utils

from vcrime_audit.store import Store
from vcrime_audit.store.migrations import MIGRATIONS, m004_followups, migrate

TABLES = {"followups", "followup_calls", "rejudged_turns", "annotations", "annotation_results",
          "interrogations"}


def test_m004_is_registered_and_applied_once(tmp_path):
    assert m004_followups in MIGRATIONS
    store = Store(tmp_path / "s.sqlite")
    assert TABLES <= set(store.db.table_names())
    assert migrate(store.db) == []
    names = [r["name"] for r in store.db["_migrations"].rows]
    assert names.count("m004_followups") == 1


def test_an_older_store_gains_the_tables_when_opened(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite_utils.Database(path)
    db["_migrations"].create({"name": str}, pk="name")
    for migration in MIGRATIONS[:MIGRATIONS.index(m004_followups)]:
        migration(db)
        db["_migrations"].insert({"name": migration.__name__})
    db.conn.commit()
    assert not TABLES & set(db.table_names())
    assert TABLES <= set(Store(path).db.table_names())
