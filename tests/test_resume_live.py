"""A run cut off mid-way resumes from its cassette and, with the real model, ends with the rows
of the uninterrupted run (all but the calls' wall-clock times)."""

import asyncio

import pytest

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cassette.persist import read_final, write_records
from vcrime_audit.runner import RunConfig, run_episode
from vcrime_audit.store import Store
from vcrime_audit.store.db import decision_rows

pytestmark = pytest.mark.live

KEPT_CALLS = 3  # the Attacker's plan and act, the Judge's first answer: the rest is asked again


def test_cut_cassette_resumes_live_to_the_recorded_rows(tmp_path, live_one_turn, tiny_task):
    whole = live_one_turn
    recorded = Cassette(whole.cassette, RecordMode.none)
    cut = tmp_path / "cut" / whole.cassette.name
    cut.parent.mkdir()
    records, _ = read_final(whole.cassette)
    calls = [r for r in records if r["type"] == "call"]
    write_records(cut, [r for r in records if r["type"] == "header"] + calls[:KEPT_CALLS])
    kept = Cassette(cut, RecordMode.none)
    assert kept.summary is None and len(kept.calls) == KEPT_CALLS
    dropped = len(recorded.calls) - KEPT_CALLS
    assert dropped >= 3, "the World Manager's calls are gone"

    config = RunConfig(task=tiny_task, max_turns=1)
    outcome = asyncio.run(run_episode(config, tmp_path / "cut.sqlite", cut.parent, RecordMode.new))
    assert outcome.replayed_calls == KEPT_CALLS and outcome.model_calls == dropped
    assert outcome.check.ok
    resumed = decision_rows(Store(tmp_path / "cut.sqlite"), whole.run_id)
    assert resumed == decision_rows(Store(whole.store), whole.run_id)
