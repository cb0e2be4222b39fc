"""`store.kept`: turn rows kept as SQLite would give them back, checked against SQLite itself."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import replay_loaded
from vcrime_audit.store import Store
from vcrime_audit.store.kept import KEPT_TABLES, CannotTell, KeptTurnRows, keepable, stored_value
from vcrime_audit.verify import _run_table_tuples

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"


def same(a: Any, b: Any) -> bool:
    """Equal and of one type, a float's sign and NaN included."""
    if type(a) is not type(b):
        return False
    if type(a) is float:
        return struct.pack("<d", a) == struct.pack("<d", b)
    return a == b


Table = tuple[list[str], list[tuple[Any, ...]]]


def same_tables(a: Table, b: Table) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(
        len(x) == len(y) and all(same(u, v) for u, v in zip(x, y, strict=True))
        for x, y in zip(a[1], b[1], strict=True))


values = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 2.0**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1]),
    st.text(), st.sampled_from(["3", "2.5", " 7 ", "1e3", "x\x00y", "\ud800", "é"]),
    st.binary(max_size=4))


@given(value=values, affinity=st.sampled_from(["TEXT", "INTEGER", "REAL"]))
@settings(max_examples=600, deadline=None)
def test_stored_value_is_what_sqlite_gives_back(value, affinity):
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE t (v {affinity})")
    try:
        predicted = stored_value(value, affinity)
    except CannotTell:
        return
    conn.execute("INSERT INTO t VALUES (?)", [value])
    assert same(conn.execute("SELECT v FROM t").fetchone()[0], predicted)


def test_stored_value_tells_the_plain_cases():
    assert stored_value(3, "REAL") == 3.0 and type(stored_value(3, "REAL")) is float
    assert math.copysign(1, stored_value(-0.0, "REAL")) == 1
    assert stored_value(True, "INTEGER") == 1 and type(stored_value(True, "INTEGER")) is int
    for value, affinity in ((float("nan"), "REAL"), ("3", "INTEGER"), (3, "TEXT"), (1.0, "INTEGER"),
                            ("\ud800", "TEXT"), (2**63, "INTEGER"), (2**53 + 1, "REAL"), (b"x", "TEXT")):
        with pytest.raises(CannotTell):
            stored_value(value, affinity)


COLUMNS = {"turns": ["turn", "description", "draw", "world_before"],
           "calls": ["turn", "seq", "ok", "seconds", "request_hash"],
           "judgments": ["turn", "judge", "source", "non_failure", "risky"],
           "patches": ["turn", "seq", "op", "applied"],
           "harm": ["turn", "force", "lexicon_digest"]}
AFFINITY = {"turn": "INTEGER", "seq": "INTEGER", "ok": "INTEGER", "risky": "INTEGER", "applied": "INTEGER",
            "force": "INTEGER", "draw": "REAL", "seconds": "REAL", "non_failure": "REAL"}
ONE_A_TURN = ("turns", "harm")
KEYS = {"turn", "seq", "judge"}
plain_values = {"TEXT": st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=5),
                "INTEGER": st.integers(-(2**63), 2**63 - 1),
                "REAL": st.one_of(st.floats(allow_nan=False), st.integers(-(2**53), 2**53))}


@st.composite
def turn_batches(draw: Any) -> list[dict[str, list[dict[str, Any]]]]:
    """Turns' rows as the engine makes them (one turn row and harm row a turn, calls and patches
    in order), each value of its column's type; now and then one odd thing: a value of any type,
    a key that repeats or goes back, a column the table lacks."""
    def odd() -> bool:
        return draw(st.integers(0, 24)) == 0

    batches = []
    for turn in range(1, draw(st.integers(1, 4)) + 1):
        batch: dict[str, list[dict[str, Any]]] = {}
        for table in KEPT_TABLES:
            rows = []
            for seq in range(draw(st.integers(0, 1 if table in ONE_A_TURN else 3))):
                row: dict[str, Any] = {"run_id": "r1"}
                for column in COLUMNS[table]:
                    row[column] = {"turn": turn, "seq": seq, "judge": f"j{seq}"}.get(column) or draw(
                        st.sampled_from(["live", "rejudge"]) if column == "source"
                        else plain_values[AFFINITY.get(column, "TEXT")])
                    if odd():
                        row[column] = draw(values)
                if odd():  # a key that repeats, or goes back
                    row[draw(st.sampled_from([c for c in COLUMNS[table] if c in KEYS]))] = draw(
                        st.integers(0, 3) | st.sampled_from(["j0", "j1"]))
                if odd():
                    row["no_such_column"] = 1
                rows.append(row)
            batch[table] = rows
        batches.append(batch)
    return batches


def insert_all(store: Store, batches: list[dict[str, list[dict[str, Any]]]]) -> str | None:
    """The batches inserted a turn to a transaction; the first failure's type, if any."""
    store.start_run({"run_id": "r1", "status": "running"})
    for turn, batch in enumerate(batches, start=1):
        try:
            with store.db.conn:
                store.insert_turn_rows("r1", turn, batch)
        except Exception as exc:  # noqa: BLE001 -- what SQLite raises is compared, whatever it is
            return type(exc).__name__
    return None


@given(batches=turn_batches())
@settings(max_examples=400, deadline=None)
def test_kept_rows_read_as_sqlites_rows(batches):
    """Whatever the rows, a store that keeps them reads (or fails) as SQLite does: each table's
    rows, a run's live judgments, without columns, as tuples and as dicts."""
    kept, plain = KeptTurnRows(), Store.in_memory()
    try:
        failed = insert_all(kept, batches)
        assert failed == insert_all(plain, batches)
        if failed is not None:  # the failed turn's transaction rolled back in SQLite only
            return
        for table in KEPT_TABLES:
            where = "source = 'live'" if table == "judgments" else ""
            for without in ((), ("run_id",), ("run_id", "turn")):
                assert same_tables(kept.row_tuples(table, "r1", where, without),
                                   plain.row_tuples(table, "r1", where, without))
            assert same_tables(kept.row_tuples(table, "r2"), plain.row_tuples(table, "r2"))
        assert kept.rows("turns", "r1") == plain.rows("turns", "r1")
        assert kept.run("r1") == plain.run("r1")
    finally:
        kept.close()
        plain.close()


EDGES = [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**53, 2**53 + 1, True, 1.0, 1.5, -0.0, float("nan"),
         float("inf"), "3", "", "\ud800", "x\udfffy", "é", b"x", None]


def plain_turns() -> list[dict[str, list[dict[str, Any]]]]:
    """Two turns with a row or two in every table, each value of its column's type."""
    def row(table: str, turn: int, seq: int) -> dict[str, Any]:
        made: dict[str, Any] = {"run_id": "r1"}
        for column in COLUMNS[table]:
            made[column] = {"turn": turn, "seq": seq, "judge": f"j{seq}", "source": "live"}.get(
                column, {"INTEGER": 1, "REAL": 0.5}.get(AFFINITY.get(column, "TEXT"), f"text {seq}"))
        return made
    return [{table: [row(table, turn, seq) for seq in range(1 if table in ONE_A_TURN else 2)]
             for table in KEPT_TABLES} for turn in (1, 2)]


@pytest.mark.parametrize("table,column", [(t, c) for t in KEPT_TABLES for c in COLUMNS[t]])
def test_one_odd_value_among_plain_rows_reads_as_sqlite_reads_it(table, column):
    """Plain turns with one value of an edge kind put in one place, for every place and kind: the
    kept store, keeping up to there, takes it as SQLite does (keeps it as SQLite gives it back,
    or lets SQLite insert it, or raises what SQLite raises)."""
    for value in EDGES:
        for turn, seq in ((0, 0), (1, 0)):
            batches = plain_turns()
            batches[turn][table][seq][column] = value
            test_kept_rows_read_as_sqlites_rows.hypothesis.inner_test(batches)


def test_a_row_it_cannot_tell_puts_the_kept_rows_in_sqlite():
    store = KeptTurnRows()
    store.start_run({"run_id": "r1", "status": "running"})
    store.insert_turn_rows("r1", 1, {t: [] for t in KEPT_TABLES} | {"turns": [{"run_id": "r1", "turn": 1}]})
    assert store._kept is not None and store.db.conn.execute("SELECT COUNT(*) FROM turns").fetchone() == (0,)
    store.insert_turn_rows("r1", 2, {t: [] for t in KEPT_TABLES} | {"turns": [{"run_id": "r1", "turn": 2,
                                                                              "draw": "a text"}]})
    assert store._kept is None
    assert store.db.conn.execute("SELECT turn, draw FROM turns ORDER BY turn").fetchall() == [
        (1, None), (2, "a text")]
    assert store.run("r1")["turns"] == 2


def test_a_table_with_a_trigger_is_not_kept():
    conn = KeptTurnRows().db.conn
    assert keepable(conn) is not None
    conn.execute("CREATE TRIGGER t AFTER INSERT ON harm BEGIN SELECT 1; END")
    assert keepable(conn) is None
    conn.execute("DROP TRIGGER t")
    conn.execute("ALTER TABLE calls ADD COLUMN note TEXT DEFAULT 'x'")
    assert keepable(conn) is None
    conn.execute("ALTER TABLE calls DROP COLUMN note")
    conn.execute("CREATE UNIQUE INDEX u ON harm (lexicon_digest)")
    assert keepable(conn) is None
    conn.execute("DROP INDEX u")
    assert keepable(conn) is not None
    conn.execute("PRAGMA foreign_keys = ON")
    assert keepable(conn) is None


def test_a_replay_keeps_every_turn_row_and_reads_as_a_store_in_memory():
    """The committed cassette's replay: no turn row reaches SQLite, and the rows verify
    compares (:func:`verify._run_table_tuples`) are a store in memory's, value for value."""
    derived = {}
    for make in (KeptTurnRows, Store.in_memory):
        store = make()
        try:
            outcome = asyncio.run(replay_loaded(Cassette(DEMO, RecordMode.none, unread_requests=True), store))
            assert outcome.identical
            if make is KeptTurnRows:
                assert store._kept is not None
                assert store.db.conn.execute("SELECT COUNT(*) FROM turns").fetchone() == (0,)
            derived[make] = _run_table_tuples(store, outcome.run_id)
        finally:
            store.close()
    kept, plain = derived.values()
    for table in KEPT_TABLES:
        assert kept[table][1] and same_tables(kept[table], plain[table])


def test_deleting_a_run_or_reading_and_writing_past_the_kept_rows_is_as_in_sqlite():
    """A run cleared or deleted drops its kept rows only; a query other than ``row_tuples`` and
    an insert of rows not made by a turn see every kept row, in SQLite."""
    def two_runs(store: Store) -> Store:
        for run in ("r1", "r2"):
            store.start_run({"run_id": run, "status": "running"})
            for turn, batch in enumerate(plain_turns(), start=1):
                with store.db.conn:
                    store.insert_turn_rows(run, turn, {t: [{**r, "run_id": run} for r in rows]
                                                       for t, rows in batch.items()})
        return store

    kept, plain = two_runs(KeptTurnRows()), two_runs(Store.in_memory())
    for store in (kept, plain):
        store.clear_run("r1")
        store.delete_run("r2")
    assert kept._kept is not None and all(not table.rows for table in kept._kept.values())
    kept, plain = two_runs(KeptTurnRows()), two_runs(Store.in_memory())
    for store in (kept, plain):
        store.delete_run("r1")
    assert kept._kept is not None
    for table in KEPT_TABLES:
        for run in ("r1", "r2"):
            assert same_tables(kept.row_tuples(table, run), plain.row_tuples(table, run))
    assert kept.select("calls", "run_id = ?", ["r2"], "turn, seq") == \
        plain.select("calls", "run_id = ?", ["r2"], "turn, seq")
    assert kept._kept is None  # a query it does not answer put its rows in SQLite first
    kept, plain = two_runs(KeptTurnRows()), two_runs(Store.in_memory())
    extra = [{"run_id": "r2", "turn": 9, "force": 2, "lexicon_digest": "d"}]
    for store in (kept, plain):
        store.insert_rows("harm", extra)
    assert kept._kept is None
    assert same_tables(kept.row_tuples("harm", "r2"), plain.row_tuples("harm", "r2"))
