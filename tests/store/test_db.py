import asyncio
import sqlite3
from pathlib import Path

import pytest

from vcrime_audit.agents.calling import CallRecord
from vcrime_audit.engine import TurnRecord
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import ROW_ORDER, StoreError
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


def test_rows_read_as_sqlite_utils_reads_them(tmp_path, demo_world):
    store = Store(tmp_path / "s.sqlite")
    store.start_run(RUN)
    for turn in (2, 1, 3):
        store.commit_turn("r1", record(demo_world, turn), "j")
    for table in ("turns", "calls", "judgments", "patches", "harm"):
        assert store.rows(table, "r1") == list(store.db[table].rows_where(
            "run_id = ?", ["r1"], order_by=ROW_ORDER[table])), table
    assert [r["turn"] for r in store.rows("turns", "r1")] == [1, 2, 3]
    assert store.runs() == list(store.db["runs"].rows_where(order_by="started_at, run_id"))
    assert store.run("r1") == next(store.db["runs"].rows_where("run_id = ?", ["r1"]))
    assert store.run("nobody") is None
    for table in ("turns", "calls", "judgments", "patches", "harm"):  # columns left out in SQL
        assert store.rows(table, "r1", without=("run_id",)) == [
            {k: v for k, v in row.items() if k != "run_id"} for row in store.rows(table, "r1")], table
        assert all(list(row) == [c for c in store.columns(table) if c != "run_id"]
                   for row in store.rows(table, "r1", without=("run_id",)))
    store.db.conn.execute("DROP TABLE harm")
    assert store.rows("harm", "r1") == []  # an older store without the table: nothing, as before
    assert store.rows("harm", "r1", without=("run_id",)) == []  # its columns were read before
    assert store.rows("extra", "r1", without=("run_id",)) == [] and store.columns("extra") == []
    store.db.conn.execute("CREATE TABLE extra (run_id TEXT, turn INTEGER, force INTEGER)")
    store.db.conn.execute("INSERT INTO extra VALUES ('r1', 1, 2)")
    assert store.rows("extra", "r1", without=("run_id",)) == [{"turn": 1, "force": 2}], \
        "a table that was missing is looked up again once it exists"
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        store.select("turns", "no_column = 1", [], "rowid")


def test_a_read_off_the_loop_follows_the_writes_sent_before_it(tmp_path, demo_world):
    import asyncio
    import threading

    store = Store(tmp_path / "s.sqlite")
    store.start_run(RUN)

    async def main() -> tuple[list[int], list[int], str, str]:
        in_place = await store.read_off_loop(lambda s: [t["turn"] for t in s.rows("turns", "r1")])
        for turn in (1, 2, 3):
            await store.commit_off_loop(
                lambda s, turn=turn: s.write_turn("r1", record(demo_world, turn), "j"))
        where: list[str] = []

        def read(s: Store) -> list[int]:
            where.append(threading.current_thread().name)
            return [t["turn"] for t in s.rows("turns", "r1")]

        return in_place, await store.read_off_loop(read), where[0], threading.current_thread().name

    try:
        in_place, turns, reader, loop_thread = asyncio.run(main())
    finally:
        store.close()
    assert in_place == [] and turns == [1, 2, 3]
    assert reader.startswith("store-writer") and reader != loop_thread


def test_a_store_in_memory_holds_what_one_on_disk_holds_and_leaves_no_file(tmp_path, demo_world,
                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    disk, memory = Store(tmp_path / "s.sqlite"), Store.in_memory()
    for store in (disk, memory):
        store.start_run(RUN)
        for turn in (1, 2):
            store.commit_turn("r1", record(demo_world, turn), "j")
    for table in ("runs", "turns", "calls", "judgments", "patches", "harm"):
        assert memory.rows(table, "r1") == disk.rows(table, "r1"), table
    assert turn_rows_hash(memory, "r1") == turn_rows_hash(disk, "r1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "s.sqlite-shm", "s.sqlite-wal"]
    with pytest.raises(StoreError, match="no writer thread"):
        import asyncio

        asyncio.run(memory.commit_off_loop(lambda s: None))
    other = Store.in_memory()  # made while the first holds rows: a copy of the empty template
    assert other.runs() == [] and other.rows("turns", "r1") == []
    memory.close()
    assert Store.in_memory().runs() == []  # each is its own, empty


def test_stores_in_memory_are_made_on_any_thread_with_the_schema_a_file_gets(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from vcrime_audit.store.schema import schema_problems

    def made(_: int) -> list[str]:
        store = Store.in_memory()
        try:
            return sorted(store.db.table_names())
        finally:
            store.close()

    with ThreadPoolExecutor(4) as pool:
        tables = set(map(tuple, pool.map(made, range(16))))
    assert tables == {tuple(sorted(Store(tmp_path / "s.sqlite").db.table_names()))}
    memory = Store.in_memory()
    assert schema_problems(memory.db.conn) == []
    assert [m for (m,) in memory.db.conn.execute("SELECT name FROM _migrations")] == \
        [m.__name__ for m in MIGRATIONS]


@pytest.mark.parametrize("path", [":memory:", Path(":memory:"), Path("./:memory:")])
def test_sqlites_memory_name_is_refused_as_a_store_path(path):
    with pytest.raises(StoreError, match=r"^:memory:: .*lose every row.*; fix: give the store a file"):
        Store(path)


def _turns_in_file_alone(path: Path, copy: Path) -> list[int] | None:
    """The turns a copy of the store file without its write-ahead log holds (None: not even
    the table)."""
    copy.write_bytes(path.read_bytes())
    conn = sqlite3.connect(copy)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'turns'").fetchall():
            return None
        return [turn for (turn,) in conn.execute("SELECT turn FROM turns ORDER BY turn")]
    finally:
        conn.close()


@pytest.mark.parametrize("behind", [False, True])
def test_a_replayed_jobs_checkpoint_folds_the_log_into_the_file_in_place_or_behind(
        tmp_path, demo_world, behind):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    keeps_log = sqlite3.connect(path)  # store.close() is then not the last: it folds nothing in
    try:
        if behind:
            store.fold_jobs_behind()
            (pages,) = store.db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()
            assert pages == 16384
        store.start_run(RUN)
        for turn in (1, 2):
            store.commit_turn("r1", record(demo_world, turn), "j")
        keeps_log.execute("SELECT 1 FROM turns").fetchall()
        assert _turns_in_file_alone(path, tmp_path / "before.sqlite") is None
        store.job_replayed()
        if not behind:  # in place: the copy holds the job at once
            assert _turns_in_file_alone(path, tmp_path / "after.sqlite") == [1, 2]
        store.close()  # waits for the checkpoint behind
        assert _turns_in_file_alone(path, tmp_path / "closed.sqlite") == [1, 2]
        assert store._writer is None
    finally:
        keeps_log.close()


def test_a_store_whose_jobs_are_not_folded_behind_never_starts_a_writer_thread(tmp_path, demo_world):
    store = Store(tmp_path / "s.sqlite")
    store.start_run(RUN)
    store.job_replayed()
    assert store._writer is None
    store.close()


def test_a_failed_checkpoint_behind_is_raised_by_the_next_one_and_by_close(tmp_path, demo_world,
                                                                           monkeypatch):
    store = Store(tmp_path / "s.sqlite")
    store.fold_jobs_behind()
    store.start_run(RUN)
    store.commit_turn("r1", record(demo_world, 1), "j")

    def full_disk(_store: Store) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Store, "checkpoint", full_disk)
    store.job_replayed()
    asyncio.run(store.read_off_loop(lambda _s: None))  # the writer thread has run it
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.job_replayed()
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        store.close()
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        store.db.conn.execute("SELECT 1")


def test_a_store_in_memory_has_no_log_to_fold_behind():
    store = Store.in_memory()
    store.fold_jobs_behind()
    store.job_replayed()
    assert store._writer is None
    store.close()
