"""`verify`: every job of a store re-derived from its cassette, row by row."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests import committed
from tests.conftest import remount
from vcrime_audit.cassette.persist import read_records, write_records
from vcrime_audit.cli import app
from vcrime_audit.runner import replay
from vcrime_audit.verify import Verifier

FOLLOWUPS = [committed.FOLLOWUPS[kind] for kind in ("rejudge", "annotate", "interrogate")]
CASSETTES, DEMO, CERTIFY = committed.CASSETTES, committed.DEMO_RUN, committed.CERTIFY


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    """The demo store of scripts/demo_report.sh: the demo run, its follow-ups, the certificate."""
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    runner = CliRunner()
    steps = [["replay", str(DEMO), "--db", str(db)],
             ["rejudge", "--db", str(db), "--replay", str(FOLLOWUPS[0])],
             ["annotate", "--db", str(db), "--replay", str(FOLLOWUPS[1])],
             ["interrogate", "--db", str(db), "--replay", str(FOLLOWUPS[2])],
             ["certify", "--db", str(db), "--replay", str(CERTIFY)]]
    for step in steps:
        done = runner.invoke(app, step)
        assert done.exit_code == 0, (step, done.output)
    return db


def verify(*args: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["verify", *args])
    return done.exit_code, done.output


def test_the_demo_store_verifies_job_by_job(demo_store):
    code, out = verify("--db", str(demo_store), str(CASSETTES))
    assert code == 0, out
    lines = [line for line in out.splitlines() if line.startswith("verified")]
    assert len(lines) == 5 and "5 verified, 0 with problems" in out
    for kind in ("run ", "certification ", "rejudge ", "annotate ", "interrogate "):
        assert any(kind in line for line in lines), out


def test_every_committed_cassette_verifies():
    code, out = verify(str(CASSETTES), str(CASSETTES / "study-demo"))
    assert code == 0, out
    assert "0 with problems" in out and "differs" not in out


def test_a_flipped_value_in_a_store_row_is_named(demo_store, tmp_path):
    db = tmp_path / "edited.sqlite"
    with sqlite3.connect(demo_store) as source:
        source.execute("VACUUM INTO ?", [str(db)])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE patches SET reason = reason || 'x' WHERE turn = 2 AND seq = 1")
    code, out = verify("--db", str(db), str(CASSETTES))
    assert code == 1
    assert "differs" in out and "table patches" in out and "turn 2, column reason" in out, out


def test_an_edited_answer_in_a_re_signed_cassette_is_named(tmp_path):
    """The edit passes the file's checks (fresh checksums); the replay's rows catch it."""
    records = read_records(DEMO)
    for record in records:
        if record["type"] == "call" and record["request"]["call"] == "assess" \
                and record["parsed"] is not None:
            answer = json.loads(record["result"]["text"])
            answer["risky"] = not answer.get("risky", False)
            record["result"]["text"] = json.dumps(answer)
            record["parsed"] = answer
            break
    edited = tmp_path / DEMO.name
    write_records(edited, records)
    code, out = verify(str(edited))
    assert code == 1 and "differs" in out and "first difference: table" in out, out


def test_a_cassette_without_its_summary_is_unverified(tmp_path):
    text = gzip.decompress(DEMO.read_bytes()).decode().splitlines()
    cut = tmp_path / DEMO.name
    cut.write_bytes(gzip.compress(("\n".join(text[:-1]) + "\n").encode()))
    code, out = verify(str(cut))
    assert code == 1 and "unverified" in out
    done = CliRunner().invoke(app, ["replay", str(cut), "--db", str(tmp_path / "r.sqlite")])
    assert done.exit_code == 1 and "unverified turn rows" in done.output


def test_repair_finishes_a_run_whose_finish_was_interrupted(tmp_path):
    db = tmp_path / "s.sqlite"
    outcome = asyncio.run(replay(DEMO, db))
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET status = 'running', turn_rows_hash = NULL, finished_at = NULL, "
                     "writer = 'elsewhere-host-that-is-gone:1'")
    verifier = Verifier([CASSETTES])
    verifier.store(db)
    assert [v.state for v in verifier.verdicts] == ["running"]  # another host's writer counts as live
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET writer = NULL")
    code, out = verify("--db", str(db), str(CASSETTES))
    assert code == 1 and "interrupted" in out and "--repair" in out
    code, out = verify("--db", str(db), "--repair", str(CASSETTES))
    assert code == 0 and "repaired" in out, out
    code, out = verify("--db", str(db), str(CASSETTES))
    assert code == 0 and "1 verified" in out
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT turn_rows_hash FROM runs").fetchone()[0] == outcome.turn_rows_hash


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory) -> Path:
    """The demo run and the demo study's runs, replayed into one store."""
    db = tmp_path_factory.mktemp("three") / "three.sqlite"
    for cassette in [DEMO, *sorted((CASSETTES / "study-demo").glob("*.jsonl.gz"))]:
        done = CliRunner().invoke(app, ["replay", str(cassette), "--db", str(db)])
        assert done.exit_code == 0, done.output
    return db


@pytest.mark.parametrize("interrupted", [False, True])
def test_another_runs_cassette_under_a_runs_name_is_named_and_nothing_is_repaired(tmp_path, interrupted):
    """`verify --repair` of an interrupted run replayed whatever cassette bore its name: another
    run's rows were written under that run's id, the run stayed 'running' and was reported
    "repaired". Now both verdicts name the cassette's own run and the store is left as it was."""
    db, folder = tmp_path / "s.sqlite", tmp_path / "c"
    folder.mkdir()
    kept, other = (Path(shutil.copy(p, folder)) for p in committed.STUDY_DEMO_RUNS)
    for cassette in (kept, other):
        asyncio.run(replay(cassette, db))
    shutil.copy(kept, other)
    kept_id, other_id = kept.name.removesuffix(".jsonl.gz"), other.name.removesuffix(".jsonl.gz")
    if interrupted:
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE runs SET status = 'running', turn_rows_hash = NULL, finished_at = NULL, "
                         "writer = NULL WHERE run_id = ?", [other_id])
    before = list(sqlite3.connect(db).iterdump())

    code, out = verify("--db", str(db), "--repair", str(folder))
    assert code == 1 and "repaired" not in out and "1 verified, 1 with problems" in out, out
    assert f"run {other_id}: {other}: header.meta makes it run {kept_id}, but it " \
        f"was found for run {other_id}: the file is run {kept_id}'s recording; fix: " in out
    assert list(sqlite3.connect(db).iterdump()) == before


def verdicts(db: Path, workers: int) -> list[tuple[str, str, str, str]]:
    verifier = Verifier([CASSETTES, CASSETTES / "study-demo"], workers=workers)
    try:
        assert not verifier.store(db)
    finally:
        verifier.close()
    return [(v.kind, v.job_id, v.state, v.where) for v in verifier.verdicts]


def test_runs_verified_in_two_processes_give_the_same_verdicts_in_order(three_runs, tmp_path):
    one = verdicts(three_runs, 1)
    assert len(one) == 3 and {v[2] for v in one} == {"verified"}
    assert verdicts(three_runs, 2) == one
    db = tmp_path / "edited.sqlite"
    with sqlite3.connect(three_runs) as source:
        source.execute("VACUUM INTO ?", [str(db)])
    second = one[1][1]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE turns SET plan = plan || 'x' WHERE run_id = ? AND turn = 1", [second])
    edited = verdicts(db, 2)
    assert edited == verdicts(db, 1)
    assert [v[2] for v in edited] == ["verified", "differs", "verified"]
    assert edited[1][1] == second and "table turns" in edited[1][3] and "column plan" in edited[1][3]
    code, out = verify("--db", str(db), "--workers", "2", str(CASSETTES), str(CASSETTES / "study-demo"))
    assert code == 1 and "2 verified, 1 with problems" in out, out
    code, out = verify("--db", str(db), "--workers", "0", str(CASSETTES))
    assert code == 2 and "Traceback" not in out and "--workers" in out, out


def cyclic_garbage_of_a_verifying_process(db: Path, runs: int) -> list[str]:
    """Types of the objects in reference cycles that a verifying worker's share of ``runs`` runs
    leaves (``verify._verify_runs``: what its collector, off for the process's life, never frees)."""
    import gc

    from vcrime_audit.store import Store
    from vcrime_audit.verify import _verify_runs

    store = Store(db)
    run_ids = [r["run_id"] for r in store.runs()][:runs]
    store.close()
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage, not freed
    try:
        found = _verify_runs(str(db), [str(CASSETTES), str(CASSETTES / "study-demo")], run_ids)
        gc.collect()
        assert [v.state for v in found] == ["verified"] * runs
        return sorted(type(o).__name__ for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def test_verifying_runs_leaves_no_reference_cycles(three_runs):
    """``verify --workers`` keeps each worker's collector off (collector_off_in_this_process): a
    verified run that left cycles would grow a worker's memory with every run it verifies."""
    cyclic_garbage_of_a_verifying_process(three_runs, 3)  # imports, schemas, the lexicon: once
    assert cyclic_garbage_of_a_verifying_process(three_runs, 3) == \
        cyclic_garbage_of_a_verifying_process(three_runs, 1)


def test_a_verified_run_is_re_derived_in_memory_and_writes_no_file(three_runs):
    verifier = Verifier([CASSETTES, CASSETTES / "study-demo"])
    try:
        assert not verifier.store(three_runs)
        assert [v.state for v in verifier.verdicts] == ["verified"] * 3
        assert list(verifier._tmp.iterdir()) == []
    finally:
        verifier.close()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_store_whose_index_disagrees_with_its_table_is_a_store_problem(three_runs, tmp_path, workers):
    """integrity_check runs on its own thread while the runs are verified; what it finds is still
    reported, and fails the command, with one or two worker processes."""
    db = tmp_path / "damaged.sqlite"
    db.write_bytes(three_runs.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE INDEX turns_by_plan ON turns(plan)")
    with sqlite3.connect(db) as conn:  # the index now claims another column than the one it holds
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET sql = 'CREATE INDEX turns_by_plan ON turns(observation)' "
                     "WHERE name = 'turns_by_plan'")
    code, out = verify("--db", str(db), "--workers", workers, str(CASSETTES), str(CASSETTES / "study-demo"))
    assert code == 1, out
    assert "integrity_check: " in out and "turns_by_plan" in out, out
    assert "3 verified, 0 with problems, " in out and "store problem(s)" in out, out


def test_an_integrity_check_reports_or_stops_when_cancelled(tmp_path):
    """A verify that fails or is stopped does not wait for the store's integrity check: cancel()
    aborts the statement (or it never starts)."""
    from concurrent.futures import CancelledError

    from vcrime_audit.store import Store
    from vcrime_audit.store.integrity_check import IntegrityCheck

    db = tmp_path / "big.sqlite"
    Store(db).close()
    with sqlite3.connect(db) as conn:  # ~0.4 s of checking: an index over 300,000 random keys
        conn.execute("CREATE TABLE filler (x BLOB)")
        conn.execute("CREATE INDEX filler_x ON filler(x)")
        conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300000) "
                     "INSERT INTO filler SELECT randomblob(16) FROM n")
    assert IntegrityCheck(db).result() == []
    check = IntegrityCheck(db)
    check.cancel()
    with pytest.raises((CancelledError, sqlite3.OperationalError), match="^$|interrupted"):
        check.result()


@given(st.integers(0, 3000), st.integers(1, 8))
def test_slices_keep_the_runs_in_order_and_shrink_towards_the_end(count, workers):
    """verify._slices: every run once, in the store's order; no slice larger than the first; and
    the last ones small, so that no process is left verifying a large slice alone."""
    from vcrime_audit.verify import CHUNKS_PER_WORKER, _slices

    runs = [f"r{i}" for i in range(count)]
    slices = _slices(runs, workers)
    assert [run for part in slices for run in part] == runs
    sizes = [len(part) for part in slices]
    assert all(sizes) and sizes == sorted(sizes, reverse=True)
    assert not sizes or sizes[0] == max(1, -(-count // (workers * CHUNKS_PER_WORKER)))
    left = count
    for size in sizes:  # each slice at most half of each worker's share of what was left (or one run)
        assert size <= max(1, -(-left // (2 * workers)))
        left -= size


def test_a_failed_replay_lets_go_of_its_frames_at_once(tmp_path):
    """Verifying workers keep the collector off: a replay that fails (a miss, as every run meets
    after a prompt change) raised from its asyncio task inside a reference cycle whose frames
    held the run's cassette and rows, ~7 MB a run, until the process ended (verify._played)."""
    import gc

    from vcrime_audit.cassette import Cassette, CassetteMiss, RecordMode
    from vcrime_audit.verify import _replay_in_memory, _run_table_tuples

    records = read_records(DEMO)
    location = next(iter(records[0]["meta"]["initial_world"]["locations"].values()))
    location["description"] += " (edited)"
    edited = tmp_path / DEMO.name
    write_records(edited, records)
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage, not freed
    try:
        with pytest.raises(CassetteMiss):
            _replay_in_memory(Cassette(edited, RecordMode.none), _run_table_tuples)
        gc.collect()
        kept = sorted({type(o).__name__ for o in gc.garbage} & {"frame", "Cassette", "Store", "WorldState"})
        assert kept == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("table, key, cassette, edit", [
    ("certifications", "certification_id", CERTIFY, {"confidence": 0.9}),
    ("followups", "followup_id", FOLLOWUPS[0], {"per_attacker": 4}),
], ids=["certification", "rejudge"])
def test_repair_refuses_another_jobs_cassette_under_a_jobs_name(demo_store, tmp_path, table, key,
                                                                cassette, edit):
    """Another certification's (or rejudge's) cassette under an interrupted one's name, in the
    folder searched for it (its recorded place is gone), made by an edit that leaves every call as
    recorded (the bound's confidence; a sample size that takes the same turns): `verify --repair`
    replayed it, stored it under its own id, left the job 'running' and reported it "repaired"."""
    db = tmp_path / "s.sqlite"
    with sqlite3.connect(demo_store) as source, sqlite3.connect(db) as copy:
        source.backup(copy)
    records = read_records(cassette)
    records[0]["meta"]["config"].update(edit)
    folder = tmp_path / "c"
    write_records(folder / cassette.name, records)
    job_id = cassette.name.removesuffix(".jsonl.gz").removeprefix("certify-")
    with sqlite3.connect(db) as conn:
        assert conn.execute(f"UPDATE {table} SET status = 'running', writer = NULL, cassette = ? "
                            f"WHERE {key} = ?", [f"moved/{cassette.name}", job_id]).rowcount == 1
    before = list(sqlite3.connect(db).iterdump())

    code, out = verify("--db", str(db), "--repair", str(folder), str(CASSETTES))
    assert code == 1 and "repaired" not in out, out
    [line] = [line for line in out.splitlines() if job_id in line]
    assert line.startswith("differs") and f"{folder / cassette.name}: header.meta" in line, line
    job = "certification" if table == "certifications" else "follow-up"
    assert f"but it was found for {job} {job_id}: the file is {job} " in line \
        and "'s recording; fix: put this " in line, line
    assert list(sqlite3.connect(db).iterdump()) == before


def test_a_store_on_a_read_only_file_system_is_verified_and_repair_refused(demo_store, read_only_folder):
    """An archived study, on read-only media: verify used to open it for writing and said "not a
    usable SQLite store (unable to open database file)"."""
    shutil.copy(demo_store, read_only_folder / "demo.sqlite")
    shutil.copytree(CASSETTES, read_only_folder / "cassettes")
    remount(read_only_folder, "ro")
    db = read_only_folder / "demo.sqlite"
    code, out = verify("--db", str(db), str(read_only_folder / "cassettes"))
    assert code == 0 and "5 verified, 0 with problems" in out, out
    code, out = verify("--db", str(db), "--repair", str(read_only_folder / "cassettes"))
    assert code != 0 and out.strip().splitlines()[-1] == (
        f"error: {db}: cannot be written here (a read-only file system), and --repair writes the jobs "
        "it finishes into it; fix: copy the store to a writable folder, or verify without --repair")


def test_a_job_whose_rows_cannot_be_read_is_named_and_the_others_verified(demo_store, tmp_path):
    """A follow-up's call rows on zeroed pages: each follow-up is a verdict naming it, the run and
    the certification are still verified, and SQLite's integrity check is a store problem."""
    from tests.damage import zero_table_pages

    db = tmp_path / "damaged.sqlite"
    shutil.copyfile(demo_store, db)
    zero_table_pages(db, "followup_calls")
    code, out = verify("--db", str(db), str(CASSETTES))
    assert code == 1, out
    lines = out.splitlines()
    for kind in ("rejudge", "annotate", "interrogate"):
        assert any(line.startswith(f"differs          {kind} ") and line.endswith(
            ": its rows cannot be read (database disk image is malformed); fix: restore the store "
            "from a copy, or replay its cassettes into a new store") for line in lines), out
    assert sum(line.startswith("verified ") for line in lines) == 2, out
    assert any(line.startswith("store problem: integrity_check:") for line in lines), out


def test_a_verify_that_fails_holds_no_file_of_its_store_afterwards(demo_store, tmp_path):
    """The runs cannot be listed: the integrity check, started beside the runs on its own thread
    and connection, is stopped, and its connection closed before the command returns (it was
    still open then: CI's generated damaged stores found it)."""
    from tests.conftest import open_under
    from tests.damage import zero_table_pages

    folder = tmp_path / "damaged"
    folder.mkdir()
    db = folder / "s.sqlite"
    shutil.copyfile(demo_store, db)
    zero_table_pages(db, "runs")
    for _ in range(5):
        code, out = verify("--db", str(db), str(CASSETTES))
        assert code == 2 and out.startswith(f"error: {db}: cannot be read or written (database disk "
                                            "image is malformed)"), out
        assert open_under(folder) == []
