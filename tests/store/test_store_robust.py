"""Stores under concurrency and damage: one migration for ten processes, refusal of newer or
damaged schemas with one clear line, read-only opening that creates nothing."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vcrime_audit.cli import app
from vcrime_audit.store import Store
from vcrime_audit.store.db import StoreError
from vcrime_audit.store.integrity_check import integrity_problems
from vcrime_audit.store.migrations import MIGRATIONS

RUN = {"run_id": "r1", "task_id": "t", "status": "won", "turns": 0, "reason": "done",
       "attacker": "a", "started_at": "2026-01-01T00:00:00+00:00"}


def _open_at_once(args: tuple[str, object]) -> tuple[list[str], int]:
    path, barrier = args
    barrier.wait()
    store = Store(path)
    return store.migrated, len(store.runs())


def test_ten_processes_on_a_new_store_migrate_once(tmp_path):
    path = str(tmp_path / "new" / "s.sqlite")
    ctx = mp.get_context("fork")
    with ctx.Manager() as manager:
        barrier = manager.Barrier(10)
        with ctx.Pool(10) as pool:
            results = pool.map(_open_at_once, [(path, barrier)] * 10)
    applied = [names for names, _ in results if names]
    assert applied == [[m.__name__ for m in MIGRATIONS]]  # exactly one process migrated
    assert all(n == 0 for _, n in results)
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM _migrations ORDER BY rowid")] == \
        [m.__name__ for m in MIGRATIONS]
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.start_run(RUN)
    store.close()
    return path


def _cli(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def _refused_by_store_and_cli(path: Path, pattern: str, line: str, *command: str) -> None:
    """Opening the store (read-write and read-only) raises `pattern`; the command exits 2 with one
    line that says `line`."""
    for readonly in (False, True):
        with pytest.raises(StoreError, match=pattern):
            Store(path, readonly=readonly)
    code, out = _cli(*command)
    assert code == 2 and line in out and len(out.strip().splitlines()) == 1


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    path = _store(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO _migrations (name) VALUES ('m999_from_the_future')")
    _refused_by_store_and_cli(path, "newer vcrime-audit.*m999_from_the_future.*fix: upgrade",
                              "newer vcrime-audit", "runs", "--db", str(path))
    assert any("m999" in p for p in integrity_problems(path))


@pytest.mark.parametrize("damage, named", [
    ("DROP TABLE turns", "table 'turns' is missing"),
    ("ALTER TABLE runs DROP COLUMN status", "column 'runs.status' is missing"),
    ("ALTER TABLE calls DROP COLUMN finish_reason", "column 'calls.finish_reason' is missing"),
])
def test_a_store_missing_a_table_or_column_is_refused(tmp_path, damage, named):
    path = _store(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute(damage)
    with pytest.raises(StoreError, match="damaged store: " + named.replace("(", r"\(")):
        Store(path)
    for command in (["runs", "--db", str(path)], ["show", "r1", "--db", str(path)]):
        code, out = _cli(*command)
        assert code == 2, out
        assert named in out and "fix:" in out and len(out.strip().splitlines()) == 1
    assert named in integrity_problems(path)


def test_a_store_that_records_no_migration_is_refused(tmp_path):
    path = _store(tmp_path)
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM _migrations")
    _refused_by_store_and_cli(path, "not a vcrime-audit store.*fix:", "not a vcrime-audit store",
                              "audit", "--db", str(path), "--out", str(tmp_path / "report"))


def test_integrity_problems_of_a_sound_and_a_corrupted_store(tmp_path):
    path = _store(tmp_path)
    assert integrity_problems(path) == []
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    for start in range(page, len(data), page):  # the b-tree header of every page but the first
        data[start:start + 12] = b"\xff" * 12
    path.write_bytes(bytes(data))
    assert integrity_problems(path) != []


def test_read_commands_create_nothing(tmp_path):
    path = _store(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert _cli("runs", "--db", str(path))[0] == 0
    assert _cli("show", "r1", "--db", str(path))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    for command in ("runs", "show"):
        missing = tmp_path / "typo" / "store.sqlite"
        args = ["runs", "--db", str(missing)] if command == "runs" else ["show", "r1", "--db", str(missing)]
        code, out = _cli(*args)
        assert code == 2 and "no such store" in out and len(out.strip().splitlines()) == 1
        assert not (tmp_path / "typo").exists()
    code, out = _cli("merge", str(tmp_path / "out.sqlite"), str(tmp_path / "absent.sqlite"))
    assert code == 2 and "absent.sqlite: no such store" in out
    assert not (tmp_path / "out.sqlite").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_read_only_store_cannot_be_written(tmp_path):
    path = _store(tmp_path)
    store = Store.open_existing(path)
    assert [r["run_id"] for r in store.runs()] == ["r1"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store.finish_run("r1", status="lost")


def test_show_and_runs_escape_terminal_sequences(tmp_path):
    path = tmp_path / "s.sqlite"
    store = Store(path)
    store.start_run({**RUN, "reason": "\x1b[2J\x1b]0;owned\x07done\r"})
    store.close()
    code, out = _cli("runs", "--db", str(path))
    assert code == 0 and "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "\\e[2J" in out
    code, out = _cli("show", "r1", "--db", str(path))
    assert code == 0 and "\x1b" not in out and "\\e]0;owned\\x07done\\r" in out


@pytest.mark.parametrize("command", ["replay", "runs", "audit", "merge"])
def test_sqlites_memory_name_as_a_store_is_refused_in_one_line(tmp_path, command):
    """SQLite takes ``:memory:`` for a database in memory: a replay into it printed "identical"
    and kept nothing."""
    cassette = next((Path(__file__).parents[2] / "cassettes").glob("*.jsonl.gz"))
    args = {"replay": ["replay", str(cassette), "--db", ":memory:"],
            "runs": ["runs", "--db", ":memory:"],
            "audit": ["audit", "--db", ":memory:", "--out", str(tmp_path / "report")],
            "merge": ["merge", ":memory:", str(_store(tmp_path))]}[command]
    code, out = _cli(*args)
    assert code == 2 and ":memory:" in out and "fix:" in out and len(out.strip().splitlines()) == 1, out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(alphabet=":./\\~$%?*\x00 ab", min_size=1, max_size=24),
                 st.integers(200, 5000).map(lambda n: "a" * n)))
def test_a_store_opened_at_any_path_opens_or_names_its_problem(tmp_path, name):
    """Any text as a store's path (a study file's db: may hold any): a store, or one StoreError
    line that names a fix; nothing else is raised."""
    for readonly in (True, False):
        try:
            Store(tmp_path / "in" / name, readonly=readonly).close()
        except StoreError as exc:
            assert "fix:" in str(exc) and "\n" not in str(exc), exc


def test_a_schema_whose_text_is_not_utf8_is_named_and_the_file_closed(tmp_path):
    """SQLite's message then quotes the bad byte, and Python raises UnicodeDecodeError in place of
    SQLite's error: it was reported as "a row holds malformed data", and the file was left open."""
    from tests.conftest import open_under

    db = tmp_path / "s.sqlite"
    Store(db).close()
    data = bytearray(db.read_bytes())
    at = data.index(b'CREATE TABLE "turns"') + len(b'CREATE TABLE "')
    data[at] = 0x80
    db.write_bytes(bytes(data))
    for readonly in (False, True):
        with pytest.raises(StoreError) as refused:
            Store(db, readonly=readonly)
        assert "not a usable SQLite store (malformed database schema" in str(refused.value)
        assert open_under(tmp_path) == []
    done = CliRunner().invoke(app, ["runs", "--db", str(db)])
    assert done.exit_code == 2 and done.output.startswith(f"error: {db}: not a usable SQLite store "
                                                          "(malformed database schema (turns)")


def test_a_command_writing_into_a_damaged_store_names_it_in_one_line(tmp_path):
    from tests.committed import DEMO_RUN
    from tests.conftest import open_under
    from tests.damage import zero_table_pages

    db = tmp_path / "s.sqlite"
    assert CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(db)]).exit_code == 0
    zero_table_pages(db, "runs")
    done = CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(db)])
    assert done.exit_code == 2 and isinstance(done.exception, SystemExit), done.output
    assert done.output.strip().splitlines()[-1] == (
        f"error: {db}: cannot be read or written (database disk image is malformed); fix: check it "
        "with `vcrime-audit verify`, restore it from a copy, or replay its cassettes into a new store")
    assert open_under(tmp_path) == []


def test_a_migration_row_whose_name_is_not_text_is_named(tmp_path):
    """A damaged _migrations row read as NULL or bytes: a TypeError traceback before."""
    db = tmp_path / "s.sqlite"
    Store(db).close()
    for value in (None, b"\x07"):  # a number would be stored as text (the column's affinity)
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE _migrations SET name = ? WHERE rowid = (SELECT MIN(rowid) FROM "
                         "_migrations)", [value])
        done = CliRunner().invoke(app, ["runs", "--db", str(db)])
        assert done.exit_code == 2 and done.output == (
            f"error: {db}: not a usable SQLite store (_migrations holds a name that is not text: "
            f"{value!r}); fix: point --db at a vcrime-audit store or a new file\n"), done.output
