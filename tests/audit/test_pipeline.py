"""The audit reads its store at one moment, while a study goes on writing it (audit/pipeline.py)."""

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vcrime_audit.store.db as store_db
from tests.unfinished import run_tables, unfinish
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.summary import summary
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store

RESAMPLES = 40


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    return make_synthetic_store(tmp_path_factory.mktemp("moment") / "finished.sqlite",
                                SyntheticConfig(attackers=2, tasks=4, seeds=2, judges=2,
                                                min_turns=3, max_turns=6, seed=3))


def _finish_from(finished: Path, conn: sqlite3.Connection, cut: dict[str, int]) -> None:
    """What the study writes next: the rest of each cut run, in one commit."""
    conn.execute("ATTACH DATABASE ? AS done", [str(finished)])
    try:
        marks = ", ".join("?" for _ in cut)
        for table in run_tables(conn):
            conn.execute(f"INSERT INTO main.[{table}] SELECT * FROM done.[{table}] WHERE run_id IN "
                         f"({marks}) EXCEPT SELECT * FROM main.[{table}]", list(cut))
        columns = [c[1] for c in conn.execute("PRAGMA table_info(runs)") if c[1] != "run_id"]
        sets = ", ".join(f"[{c}] = (SELECT [{c}] FROM done.runs d WHERE d.run_id = runs.run_id)"
                         for c in columns)
        conn.execute(f"UPDATE main.runs SET {sets} WHERE run_id IN ({marks})", list(cut))
        conn.commit()
    finally:
        conn.execute("DETACH DATABASE done")


def _numbers(path: Path) -> dict:
    out = summary(run_audit(path, n_resamples=RESAMPLES, seed=1))
    out.pop("store")
    return out


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_audit_sees_the_store_before_or_after_a_commit_never_a_mix(finished, tmp_path_factory,
                                                                      monkeypatch, data):
    """A study commits the rest of some runs while the audit reads. The audit used to read the
    judgments, the runs, the follow-ups and the report's other sections each at its own moment
    (and its children opened the store again): a run could count as finished with the judgments
    of its last turns missing."""
    with sqlite3.connect(finished) as conn:
        lengths = dict(conn.execute("SELECT run_id, turns FROM runs ORDER BY run_id").fetchall())
    chosen = data.draw(st.lists(st.sampled_from(sorted(lengths)), min_size=1, max_size=3, unique=True))
    cut = {r: data.draw(st.integers(1, lengths[r] - 1)) for r in chosen}
    after = data.draw(st.integers(1, 40), label="statements the audit runs before the commit")
    folder = tmp_path_factory.mktemp("moment")
    before_path, during_path = folder / "before.sqlite", folder / "during.sqlite"
    unfinish(finished, before_path, cut)
    shutil.copyfile(before_path, during_path)
    before = _numbers(before_path)
    study = sqlite3.connect(during_path, timeout=30)  # a study holds the store open meanwhile
    study.execute("SELECT COUNT(*) FROM runs").fetchall()
    connect, seen = store_db.connect, []

    def interleaving(path, readonly, in_memory=False):
        conn = connect(path, readonly, in_memory)

        def trace(statement: str) -> None:
            seen.append(statement)
            if len(seen) == after:
                _finish_from(finished, study, cut)

        if Path(path) == during_path:
            conn.set_trace_callback(trace)
        return conn

    monkeypatch.setattr(store_db, "connect", interleaving)
    try:
        during = _numbers(during_path)
    finally:
        monkeypatch.undo()
        study.close()
    assert during in (before, _numbers(during_path)), \
        f"committed as statement {after} began: {seen[after - 1:after]}"
