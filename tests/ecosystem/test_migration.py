"""Migration m008_determinism adds the `determinism` table once, also to an existing store."""

import sqlite_utils

from vcrime_audit.store import Store
from vcrime_audit.store.migrations import MIGRATIONS, migrate


def test_m008_adds_the_table_once_to_an_older_store(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite_utils.Database(path)
    db["_migrations"].create({"name": str}, pk="name")
    for migration in MIGRATIONS:
        if migration.__name__ != "m008_determinism":
            migration(db)
            db["_migrations"].insert({"name": migration.__name__})
    db.conn.commit()
    assert "determinism" not in db.table_names()
    store = Store(path)
    assert "determinism" in store.db.table_names()
    assert migrate(store.db) == []
    columns = set(store.db["determinism"].columns_dict)
    assert {"cassette", "call_index", "backend", "run_id", "identical", "first_difference",
            "fingerprint_match"} <= columns
