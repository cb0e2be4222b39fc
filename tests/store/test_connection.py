"""Read-only connections to a store that other processes write (store/connection.py)."""

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import DEMO_TASK, remount
from vcrime_audit.engine import TurnRecord
from vcrime_audit.scenario import initial_world, load_task
from vcrime_audit.store import Store
from vcrime_audit.store.db import StoreError

WORLD = initial_world(load_task(DEMO_TASK))


def _write_runs(path: Path, first: int, count: int, turns: int) -> None:
    writer = Store(path)
    try:
        for n in range(first, first + count):
            run_id = f"r{n:04d}"
            writer.start_run({"run_id": run_id, "task_id": "t", "seed": n, "attacker": "a",
                              "judge": "j", "status": "running"})
            for turn in range(1, turns + 1):
                writer.commit_turn(run_id, TurnRecord(
                    turn=turn, world_before=WORLD.model_copy(update={"turn": turn}),
                    observation=f"obs {n} {turn}", status="running"), "j")
            writer.finish_run(run_id, status="lost")
    finally:
        writer.close()


def _seen(reader: Store) -> tuple[list[str], int]:
    runs = [r["run_id"] for r in reader.runs()]
    return runs, reader.db.conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 4), st.booleans()),
                        min_size=1, max_size=4))
def test_a_reader_opened_while_no_one_writes_sees_every_later_commit_whole(tmp_path_factory, batches):
    """Opened when the store has no write-ahead log, a reader used to be immutable: SQLite then
    kept its cached pages and read the ones a later writer checkpointed into the file, and saw
    stale rows, a mix of two moments, or "database disk image is malformed"."""
    path = tmp_path_factory.mktemp("store") / "s.sqlite"
    _write_runs(path, 0, 2, 2)
    reader = Store.open_existing(path)
    try:
        expected_runs, expected_turns = _seen(reader)
        first = 2
        for count, turns, checkpoint in batches:
            _write_runs(path, first, count, turns)  # closing the last writer checkpoints the log
            if checkpoint:
                with sqlite3.connect(path) as other:
                    other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            expected_runs += [f"r{n:04d}" for n in range(first, first + count)]
            expected_turns += count * turns
            first += count
            assert _seen(reader) == (sorted(expected_runs), expected_turns)
    finally:
        reader.close()


def test_a_reader_leaves_no_file_beside_the_store_and_refuses_to_write(tmp_path):
    path = tmp_path / "s.sqlite"
    _write_runs(path, 0, 1, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    written = path.read_bytes()
    reader = Store.open_existing(path)
    assert [r["run_id"] for r in reader.runs()] == ["r0000"]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.db.conn.execute("DELETE FROM runs")
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite"]
    assert path.read_bytes() == written


def test_a_store_on_a_read_only_file_system_is_read_and_an_unreadable_log_named(read_only_folder):
    path = read_only_folder / "s.sqlite"
    _write_runs(path, 0, 2, 1)
    remount(read_only_folder, "ro")
    reader = Store.open_existing(path)
    assert [r["run_id"] for r in reader.runs()] == ["r0000", "r0001"]
    reader.close()
    remount(read_only_folder, "rw")
    # a writer killed with its log unmerged, and the -shm file lost: the log's commit can be read
    # only by making a new -shm file, which a read-only file system does not allow
    code = ("import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('PRAGMA wal_autocheckpoint=0'); "
            "c.execute(\"UPDATE runs SET status = 'won'\"); c.commit(); os._exit(0)")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    Path(f"{path}-shm").unlink()
    remount(read_only_folder, "ro")
    with pytest.raises(StoreError) as caught:
        Store.open_existing(path)
    assert str(caught.value) == (
        f"{path}: its write-ahead log s.sqlite-wal holds commits that SQLite reads only where it "
        "can write beside the store; fix: copy the store and its -wal file together to a writable "
        "folder")


def test_every_read_command_reads_an_archive_on_a_read_only_file_system(read_only_folder, tmp_path):
    from typer.testing import CliRunner

    from tests.committed import CASSETTES, DEMO_RUN, HARM_CHECK
    from vcrime_audit.cli import app

    db = read_only_folder / "demo.sqlite"
    assert CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(db)]).exit_code == 0
    remount(read_only_folder, "ro")
    run_id = DEMO_RUN.name[:-len(".jsonl.gz")]
    commands = [["runs"], ["show", run_id], ["audit", "--out", str(tmp_path / "a")], ["audit", "judges"],
                ["audit", "harm-check", "--out", str(tmp_path / "h"), "--replay", str(HARM_CHECK),
                 "--per-attacker", "3"],
                ["export", "inspect", "--out", str(tmp_path / "e")], ["verify", str(CASSETTES)]]
    for command in commands:
        done = CliRunner().invoke(app, [*command, "--db", str(db)])
        assert done.exit_code == 0, (command, done.output)
    done = CliRunner().invoke(app, ["merge", str(tmp_path / "m.sqlite"), str(db)])
    assert done.exit_code == 0 and "1 run(s) added" in done.output, done.output
    assert sorted(p.name for p in read_only_folder.iterdir()) == ["demo.sqlite"]


def test_a_command_that_writes_names_a_store_it_cannot_write(read_only_folder):
    from typer.testing import CliRunner

    from tests.committed import DEMO_RUN
    from vcrime_audit.cli import app

    db = read_only_folder / "demo.sqlite"
    assert CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(db)]).exit_code == 0
    remount(read_only_folder, "ro")
    for target in (db, read_only_folder / "new.sqlite"):
        done = CliRunner().invoke(app, ["replay", str(DEMO_RUN), "--db", str(target)])
        assert done.exit_code != 0 and done.output.strip().splitlines()[-1] == (
            f"error: {target}: cannot be written here (a read-only file system), and this command "
            "writes to the store; fix: copy the store to a writable folder and point --db at the copy")
