"""Migration m004 adds the follow-up tables once, also to a store made before it existed."""

import sqlite_utils

from vcrime_audit.store import Store
from vcrime_audit.store.migrations import MIGRATIONS, migrate

TABLES = {"followups", "followup_calls", "rejudged_turns", "annotations", "annotation_results",
          "interrogations"}


def test_m004_is_applied_once(tmp_path):
    assert "m004_followups" in [m.__name__ for m in MIGRATIONS]
    store = Store(tmp_path / "s.sqlite")
    assert TABLES <= set(store.db.table_names())
    assert migrate(store.db) == []
    names = [r["name"] for r in store.db["_migrations"].rows]
    assert names.count("m004_followups") == 1


def test_an_older_store_gains_the_tables_when_opened(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite_utils.Database(path)
    db["_migrations"].create({"name": str}, pk="name")
    before = [m.__name__ for m in MIGRATIONS].index("m004_followups")
    for migration in MIGRATIONS[:before]:
        migration(db)
        db["_migrations"].insert({"name": migration.__name__})
    db.conn.commit()
    assert not TABLES & set(db.table_names())
    assert TABLES <= set(Store(path).db.table_names())


def test_m009_adds_the_fingerprint_column_to_an_older_store(tmp_path):
    path = tmp_path / "old9.sqlite"
    db = sqlite_utils.Database(path)
    db["_migrations"].create({"name": str}, pk="name")
    names = [m.__name__ for m in MIGRATIONS]
    for migration in MIGRATIONS[:names.index("m009_model_fingerprints")]:
        migration(db)
        db["_migrations"].insert({"name": migration.__name__})
    db.conn.commit()
    assert "fingerprint" not in db["models"].columns_dict
    assert "fingerprint" in Store(path).db["models"].columns_dict


def test_a_replayed_run_stores_the_weights_digest_of_its_models(demo_store):
    """Issue 11 item 12: the runner fills models.fingerprint from the backend's fingerprint."""
    from tests.followups.conftest import DEMO_RUN
    from vcrime_audit.canonical import content_hash
    from vcrime_audit.cassette import Cassette, RecordMode

    recorded = Cassette(DEMO_RUN, RecordMode.none).fingerprint_for("smollm2-135m")["weights"]
    stored = dict(Store(demo_store).db.conn.execute("SELECT name, fingerprint FROM models").fetchall())
    assert stored["smollm2-135m"] == content_hash(recorded)
