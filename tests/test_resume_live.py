"""A run cut off mid-way resumes from its cassette and, with the real model, ends byte-identical."""

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from tests.committed import DEMO_RUN
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import RunConfig, run_episode

pytest.importorskip("llama_cpp", reason="resuming live needs the local backend")
pytestmark = pytest.mark.live

ROOT = Path(__file__).resolve().parent.parent
TURN = re.compile(r"\b[Tt]urn (\d+)\.")


def call_turn(call: dict) -> int:
    return int(TURN.search(call["request"]["messages"][1]["content"]).group(1))


def test_cut_cassette_resumes_live_to_the_recorded_rows(tmp_path):
    original = DEMO_RUN
    recorded = Cassette(original, RecordMode.none)
    last = recorded.summary["turns"]
    cut = tmp_path / "cassettes" / original.name
    cut.parent.mkdir()
    shutil.copy(original, cut)
    cassette = Cassette(cut, RecordMode.new)
    cassette.calls = [c for c in recorded.calls if call_turn(c) < last]
    cassette.summary = None
    cassette.save()
    dropped = len(recorded.calls) - len(cassette.calls)
    assert dropped >= 7, "the last turn's calls are gone"

    config = RunConfig(**recorded.meta["config"])
    outcome = asyncio.run(run_episode(config, tmp_path / "s.sqlite", cut.parent, RecordMode.new))
    assert outcome.replayed_calls == len(cassette.calls) and outcome.model_calls == dropped
    assert outcome.turn_rows_hash == recorded.summary["turn_rows_hash"]
