import sqlite3

import pytest

from vcrime_audit.agents.calling import CallRecord
from vcrime_audit.engine import TurnRecord
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import StoreError
from vcrime_audit.store.migrations import MIGRATIONS, migrate

RUN = {"run_id": "r1", "task_id": "t", "seed": 0, "attacker": "a", "judge": "j", "status": "running"}


def record(world, turn):
    return TurnRecord(turn=turn, world_before=world.model_copy(update={"turn": turn}),
                      observation=f"obs {turn}", status="running")


def test_migrations_apply_once(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert migrate(store.db) == []
    names = [r["name"] for r in store.db["_migrations"].rows]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert {"runs", "turns", "calls", "judgments", "patches"} <= set(store.db.table_names())


def test_turns_commit_and_hash_ignores_run_id(tmp_path, demo_world):
    a, b = Store(tmp_path / "a.sqlite"), Store(tmp_path / "b.sqlite")
    a.start_run(RUN)
    b.start_run(RUN | {"run_id": "other"})
    for turn in (1, 2):
        a.commit_turn("r1", record(demo_world, turn), "j")
        b.commit_turn("other", record(demo_world, turn), "j")
    assert [t["turn"] for t in a.rows("turns", "r1")] == [1, 2]
    assert a.run("r1")["turns"] == 2
    assert turn_rows_hash(a, "r1") == turn_rows_hash(b, "other")
    b.commit_turn("other", record(demo_world, 3), "j")
    assert turn_rows_hash(a, "r1") != turn_rows_hash(b, "other")


def test_a_failed_turn_write_leaves_nothing_behind(tmp_path, demo_world):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.start_run(RUN)
    store.commit_turn("r1", record(demo_world, 1), "j")
    broken = record(demo_world, 2)
    broken.calls = [CallRecord("judge", "assess", 0, "j", "h", True, object(), "stop", 1, 1, 0.1)]
    with pytest.raises(sqlite3.Error):
        store.commit_turn("r1", broken, "j")  # the turn row inserts, then the call row fails
    reopened = Store(path)
    assert len(reopened.rows("turns", "r1")) == 1 and reopened.run("r1")["turns"] == 1


def test_not_a_database(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable SQLite store"):
        Store(path)
