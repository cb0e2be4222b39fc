"""Merging stores: every run's rows arrive as stored, in batches of runs per transaction."""

from __future__ import annotations

import filecmp
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unfinished import unfinish
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store
from vcrime_audit.merge import RUNS_PER_TRANSACTION, merge_stores
from vcrime_audit.store import Store
from vcrime_audit.store.db import RUN_TABLES, StoreError

TABLES = ("runs", *RUN_TABLES[1:], "models")


def dump(path, table):
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info([{table}])")]
        return sorted(conn.execute(f"SELECT {', '.join(columns)} FROM [{table}]").fetchall(), key=repr)


def keep_only(path, run_ids):
    with sqlite3.connect(path) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            if "run_id" in [r[1] for r in conn.execute(f"PRAGMA table_info([{table}])")]:
                conn.execute(f"DELETE FROM [{table}] WHERE run_id NOT IN "
                             f"({', '.join('?' for _ in run_ids)})", run_ids)


@pytest.fixture(scope="module")
def two_shards(tmp_path_factory):
    """One synthetic study split into two shards (alternate runs), each holding more runs than
    one transaction takes."""
    root = tmp_path_factory.mktemp("shards")
    config = SyntheticConfig(attackers=3, tasks=24, seeds=2, judges=2, min_turns=2, max_turns=4)
    whole = make_synthetic_store(root / "whole.sqlite", config)
    run_ids = [r[0] for r in dump(whole, "runs")]
    shards = []
    for i in range(2):
        shard = root / f"shard{i}.sqlite"
        shard.write_bytes(whole.read_bytes())
        keep_only(shard, run_ids[i::2])
        shards.append(shard)
    assert min(len(dump(s, "runs")) for s in shards) > RUNS_PER_TRANSACTION
    return shards


def test_every_row_of_every_shard_arrives(two_shards, tmp_path):
    out = tmp_path / "all.sqlite"
    report = merge_stores(out, list(two_shards))
    runs = [dump(p, "runs") for p in two_shards]
    assert len(report.runs_added) == len({r[0] for rows in runs for r in rows}) > RUNS_PER_TRANSACTION
    for table in TABLES:
        expected = sorted({row for p in two_shards for row in dump(p, table)}, key=repr)
        assert dump(out, table) == expected, table


def test_merging_again_adds_nothing_and_changes_nothing(two_shards, tmp_path):
    out = tmp_path / "all.sqlite"
    merge_stores(out, list(two_shards))
    before = {t: dump(out, t) for t in TABLES}
    report = merge_stores(out, list(two_shards))
    assert not report.runs_added and report.runs_same
    assert {t: dump(out, t) for t in TABLES} == before


def test_a_column_the_target_lacks_is_refused_not_dropped(two_shards, tmp_path):
    source = tmp_path / "newer.sqlite"
    source.write_bytes(two_shards[1].read_bytes())
    with sqlite3.connect(source) as conn:
        conn.execute("ALTER TABLE turns ADD COLUMN mood TEXT")
    with pytest.raises(StoreError, match=r"table turns has column\(s\) mood that .* lacks; fix:"):
        merge_stores(tmp_path / "all.sqlite", [source])


def test_a_merge_killed_while_gathering_cassettes_leaves_no_half_copied_one(tmp_path):
    """A killed gather left a cut copy under the cassette's name, and every later merge refused it
    ("differs ...; fix: merge shards of one study"). Now a copy appears whole or not at all."""
    shard = tmp_path / "shard"
    shard.mkdir()
    big = shard / "big.jsonl.gz"
    big.write_bytes(os.urandom(1 << 20) * 256)  # 256 MB: the copy is still going when it is killed
    store = tmp_path / "shard.sqlite"
    Store(store).close()
    gathered = tmp_path / "gathered"
    command = [sys.executable, "-m", "vcrime_audit.cli", "merge", str(tmp_path / "all.sqlite"), str(store),
               "--cassettes-out", str(gathered), "--cassettes", str(shard)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not _bytes_written(gathered):
        assert child.poll() is None and time.monotonic() < deadline, child.communicate()
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait()
    target = gathered / big.name
    assert not target.exists() or filecmp.cmp(target, big, shallow=False)

    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert filecmp.cmp(target, big, shallow=False)
    assert sorted(p.name for p in gathered.iterdir()) == [big.name]


def _bytes_written(folder) -> bool:
    try:
        return any(p.stat().st_size for p in folder.iterdir())
    except FileNotFoundError:  # no folder yet, or a file renamed meanwhile
        return False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_copies_of_a_shard_taken_while_it_played_merge_to_the_finished_shard(two_shards, tmp_path_factory,
                                                                            data):
    """A shard merged while its study still plays it (runs running, or crashed before running
    again), then merged again when finished, in any order: the finished copy of each run wins,
    and the store ends as the finished shard merged alone. A target's unfinished copy used to make
    the next merge fail ("differs; fix: merge shards of the same study only")."""
    folder = tmp_path_factory.mktemp("played")
    finished = two_shards[0]
    with sqlite3.connect(finished) as conn:
        lengths = dict(conn.execute("SELECT run_id, turns FROM runs ORDER BY run_id").fetchall())
    snapshots = []
    for n in range(data.draw(st.integers(1, 3), label="earlier copies")):
        chosen = data.draw(st.lists(st.sampled_from(sorted(lengths)), min_size=1, max_size=4, unique=True))
        cut = {r: data.draw(st.integers(0, lengths[r] - 1)) for r in chosen}
        path = folder / f"copy{n}.sqlite"
        unfinish(finished, path, cut, data.draw(st.sampled_from(["running", "crashed"])))
        snapshots.append(path)
    order = data.draw(st.permutations([*snapshots, finished]))
    out = folder / "merged.sqlite"
    for path in order:
        merge_stores(out, [path])
    merge_stores(folder / "alone.sqlite", [finished])
    for table in TABLES:
        assert dump(out, table) == dump(folder / "alone.sqlite", table), table


def test_two_finished_copies_that_differ_are_still_refused(two_shards, tmp_path):
    other = tmp_path / "other.sqlite"
    other.write_bytes(two_shards[0].read_bytes())
    with sqlite3.connect(other) as conn:
        run_id = conn.execute("SELECT run_id FROM runs WHERE status != 'running' LIMIT 1").fetchone()[0]
        conn.execute("UPDATE turns SET verb = 'dance' WHERE run_id = ?", [run_id])
    merge_stores(tmp_path / "all.sqlite", [two_shards[0]])
    with pytest.raises(StoreError, match=f"run {run_id} differs"):
        merge_stores(tmp_path / "all.sqlite", [other])


@pytest.mark.parametrize("damaged", ["target", "source"])
def test_the_store_with_damaged_pages_is_the_one_named(two_shards, tmp_path, damaged):
    """SQLite's error does not say which of the two files it read: the sound input was named when
    the target was damaged."""
    from tests.damage import zero_table_pages

    out, source = tmp_path / "all.sqlite", tmp_path / "shard1.sqlite"
    source.write_bytes(two_shards[1].read_bytes())
    merge_stores(out, [two_shards[0]])
    zero_table_pages(out if damaged == "target" else source, "turns")
    with pytest.raises(StoreError) as refused:
        merge_stores(out, [source])
    named = out if damaged == "target" else source
    assert str(refused.value) == (
        f"{named}: cannot be read or merged (database disk image is malformed); fix: check it with "
        "`vcrime-audit verify`, restore it from a copy, or replay its cassettes into a new store")
