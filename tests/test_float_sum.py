"""Float sums that do not depend on the Python version (Python 3.12's ``sum`` compensates)."""

from __future__ import annotations

import asyncio
import builtins
import functools
import operator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.certify.scripted import WordEmbedder, target_answer
from tests.committed import CERTIFY, DEMO_RUN, STUDY_DEMO_RUNS
from tests.conftest import ScriptedBackend
from tests.scripted_study import TASKS, scripted_spec
from vcrime_audit.certify.run import CertifyConfig, replay_certification, run_certification
from vcrime_audit.float_sum import sequential_sum
from vcrime_audit.runner import replay
from vcrime_audit.store import Store
from vcrime_audit.study import run_study

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.lists(FLOATS | st.integers(-2**60, 2**60), max_size=30))
def test_the_sum_is_each_value_added_in_turn_from_zero(values):
    assert repr(sequential_sum(values)) == repr(functools.reduce(operator.add, values, 0))


@pytest.mark.parametrize(("values", "total"), [
    ([0.1] * 10, 0.9999999999999999),  # compensated: 1.0
    ([1e16, 1.0, -1e16], 0.0),  # compensated: 1.0
    ([0.1, 0.2], 0.30000000000000004),
    ([-0.0], 0.0),  # from the integer 0, as sum() starts
    ([], 0),
])
def test_hand_worked_sums_are_the_ones_python_3_11_gives(values, total):
    got = sequential_sum(values)
    assert repr(got) == repr(total) and type(got) is type(total)


@pytest.fixture
def float_sums_refused(monkeypatch):
    """``sum`` that refuses floats: whatever a replay stores must be added by
    :func:`sequential_sum`, which gives the same bits on every Python, so a cassette recorded on
    3.11 replays identically on 3.13 (this test fails on any Python when a replay adds floats
    with ``sum``)."""
    plain_sum = builtins.sum

    def refusing(values, start=0):
        values = list(values)
        if any(isinstance(v, float) for v in values) or isinstance(start, float):
            raise AssertionError(f"float values added with sum(): {values[:4]} (use sequential_sum)")
        return plain_sum(values, start)

    monkeypatch.setattr(builtins, "sum", refusing)


def test_scripted_runs_record_and_replay_without_adding_floats_by_sum(registry, tmp_path,
                                                                      float_sums_refused):
    """The scripted judge's distributions are floats like 0.25 / 0.7 (the committed runs' real
    answers give totals of 1 or nothing to add, so they alone would not catch a ``sum``)."""
    spec = scripted_spec(tmp_path / "study", max_turns=6, seeds=[0])
    asyncio.run(run_study(spec))
    store = Store(spec.db)
    try:
        rates = [row[0] for row in store.db.conn.execute("SELECT non_failure FROM judgments")]
    finally:
        store.close()
    assert any(0 < rate < 1 for rate in rates), rates
    cassettes = sorted(spec.cassette_dir.glob("*.jsonl.gz"))
    assert len(cassettes) == len(TASKS)
    for path in cassettes:
        assert asyncio.run(replay(path, tmp_path / f"{path.name}.sqlite")).identical


@pytest.mark.parametrize("path", [DEMO_RUN, *STUDY_DEMO_RUNS], ids=lambda p: p.name)
def test_a_committed_run_replays_without_adding_floats_by_sum(path, tmp_path, float_sums_refused):
    assert asyncio.run(replay(path, tmp_path / "r.sqlite")).identical


def test_the_committed_certification_replays_without_adding_floats_by_sum(tmp_path, float_sums_refused):
    assert asyncio.run(replay_certification(CERTIFY, tmp_path / "r.sqlite")).identical


@pytest.mark.parametrize("options", [
    {"distribution": "adaptive_rejection", "jailbreak_p": 0.5},
    {"distribution": "graph_path", "gp_full_length_only": True, "jailbreak_p": 0.5},
    {"distribution": "random_node", "jailbreak_p": 0.5},
], ids=lambda o: o["distribution"])
def test_scripted_certifications_record_and_replay_without_adding_floats_by_sum(
        tmp_path, options, float_sums_refused):
    """Each distribution's step probabilities, a graph path's exact full-length probability and
    the jailbreak templates' log-probabilities: what a certification stores."""
    config = CertifyConfig(n=6, seed=3, **options)
    outcome = asyncio.run(run_certification(config, tmp_path / "rec.sqlite", tmp_path / "cassettes",
                                            backend=ScriptedBackend(target_answer),
                                            embedder=WordEmbedder()))
    replayed = asyncio.run(replay_certification(outcome.cassette, tmp_path / "replay.sqlite"))
    assert replayed.identical and replayed.rows_hash == outcome.rows_hash
