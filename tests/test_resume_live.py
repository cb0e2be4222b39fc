"""A run cut off mid-way resumes from its cassette and, with the real model, ends with the rows
of the uninterrupted run (all but the calls' wall-clock times).

The run is recorded here, not taken from cassettes/: llama.cpp's answers depend on the build and
the CPU it runs on, so only a recording made on this machine can be reproduced live.
"""

import asyncio
import re

import pytest

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cassette.persist import read_final, write_records
from vcrime_audit.runner import RunConfig, run_episode
from vcrime_audit.store import Store
from vcrime_audit.store.db import decision_rows

pytest.importorskip("llama_cpp", reason="resuming live needs the local backend")
pytestmark = pytest.mark.live

TURN = re.compile(r"\b[Tt]urn (\d+)\.")


def call_turn(call: dict) -> int:
    return int(TURN.search(call["request"]["messages"][1]["content"]).group(1))


def test_cut_cassette_resumes_live_to_the_recorded_rows(tmp_path):
    config = RunConfig(max_turns=2, seed=5)
    whole = asyncio.run(run_episode(config, tmp_path / "whole.sqlite", tmp_path / "whole"))
    recorded = Cassette(whole.cassette, RecordMode.none)
    assert recorded.summary["turns"] == 2
    cut = tmp_path / "cut" / whole.cassette.name
    cut.parent.mkdir()
    records, _ = read_final(whole.cassette)
    write_records(cut, [r for r in records if r["type"] == "header"
                        or (r["type"] == "call" and call_turn(r) < 2)])
    kept = Cassette(cut, RecordMode.none)
    assert kept.summary is None
    dropped = len(recorded.calls) - len(kept.calls)
    assert dropped >= 5, "the last turn's calls are gone"

    outcome = asyncio.run(run_episode(config, tmp_path / "cut.sqlite", cut.parent, RecordMode.new))
    assert outcome.replayed_calls == len(kept.calls) and outcome.model_calls == dropped
    assert outcome.check.ok
    run_id = config.run_id()
    resumed = decision_rows(Store(tmp_path / "cut.sqlite"), run_id)
    assert resumed == decision_rows(Store(tmp_path / "whole.sqlite"), run_id)
