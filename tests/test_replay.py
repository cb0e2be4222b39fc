"""The committed cassette (recorded with the real embedded model) replays byte for byte."""

import asyncio
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.committed import CERTIFY, DEMO_RUN
from vcrime_audit.agents import prompting
from vcrime_audit.cassette import Cassette, CassetteMiss, RecordMode
from vcrime_audit.cassette.lines import record_line
from vcrime_audit.rowdigest import row_digest
from vcrime_audit.runner import replay
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import trajectory_rows

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = [DEMO_RUN]


@pytest.fixture
def cassette_path():
    assert COMMITTED, "the demo cassette must be committed under cassettes/"
    return COMMITTED[0]


def test_replay_reproduces_the_recorded_turn_rows(cassette_path, tmp_path):
    recorded = Cassette(cassette_path, RecordMode.none)
    outcome = asyncio.run(replay(cassette_path, tmp_path / "replay.sqlite"))
    assert outcome.model_calls == 0 and outcome.replayed_calls == len(recorded.calls)
    assert outcome.turn_rows_hash == recorded.summary["turn_rows_hash"]
    assert outcome.identical and outcome.turns == recorded.summary["turns"] >= 1
    store = Store(tmp_path / "replay.sqlite")
    assert turn_rows_hash(store, outcome.run_id) == outcome.turn_rows_hash
    assert store.run(outcome.run_id)["status"] == recorded.summary["status"]


def test_replay_twice_gives_the_same_bytes_in_the_store(cassette_path, tmp_path):
    a = asyncio.run(replay(cassette_path, tmp_path / "a.sqlite"))
    b = asyncio.run(replay(cassette_path, tmp_path / "b.sqlite"))
    rows_a = Store(tmp_path / "a.sqlite").rows("turns", a.run_id)
    rows_b = Store(tmp_path / "b.sqlite").rows("turns", b.run_id)
    assert rows_a == rows_b and rows_a[0]["world_before"]


def test_replay_runs_with_llama_cpp_unimportable(cassette_path, tmp_path):
    script = ("import sys; sys.modules['llama_cpp'] = None\n"
              "from vcrime_audit.cli import app\n"
              f"app(['replay', {str(cassette_path)!r}, '--db', {str(tmp_path / 'r.sqlite')!r}])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "identical turn rows" in done.stdout and "0 to a model" in done.stdout


def test_one_changed_character_in_a_template_fails_with_a_diff(cassette_path, tmp_path, monkeypatch):
    prompts = tmp_path / "prompts"
    shutil.copytree(prompting.PROMPTS_DIR, prompts)
    judge = prompts / "judge_system.j2"
    judge.write_text(judge.read_text().replace("You are the Judge", "You are the Judgf", 1))
    monkeypatch.setattr(prompting, "PROMPTS_DIR", prompts)
    prompting.environment.cache_clear()
    try:
        with pytest.raises(CassetteMiss) as info:
            asyncio.run(replay(cassette_path, tmp_path / "miss.sqlite"))
    finally:
        prompting.environment.cache_clear()
    message = str(info.value)
    assert "judge 'assess' call" in message and "no model was called" in message
    assert "-You are the Judge in VirtualCrime" in message
    assert "+You are the Judgf in VirtualCrime" in message
    run = Store(tmp_path / "miss.sqlite").runs()[0]
    assert run["status"] == "crashed" and "CassetteMiss" in run["reason"]


def test_a_certification_cassette_is_refused_with_the_right_command(tmp_path):
    from vcrime_audit.cassette import CassetteError

    certify_cassette = CERTIFY
    with pytest.raises(CassetteError, match="use vcrime-audit certify --replay"):
        asyncio.run(replay(certify_cassette, tmp_path / "x.sqlite"))


@pytest.mark.parametrize("per_commit", [1, 2, 16])
def test_a_replay_commits_its_turns_in_groups_with_the_same_rows(cassette_path, tmp_path, monkeypatch,
                                                                  per_commit):
    from vcrime_audit import recorder

    monkeypatch.setattr(recorder, "REPLAYED_UNITS_PER_COMMIT", per_commit)
    outcome = asyncio.run(replay(cassette_path, tmp_path / "r.sqlite"))
    assert outcome.identical and outcome.turns == 3
    assert turn_rows_hash(Store(tmp_path / "r.sqlite"), outcome.run_id) == outcome.turn_rows_hash


def test_a_replay_that_fails_keeps_the_turns_before_the_failure(cassette_path, tmp_path, monkeypatch):
    """Turns a replay groups into one commit are committed when it fails, as each turn was when
    it had its own commit: the run is marked crashed with the turns before the failing one."""
    from vcrime_audit import engine

    assess = engine.judge.assess_messages

    def changed_on_turn_3(world, action):
        messages = assess(world, action)
        if world.turn == 3:
            messages[-1] = messages[-1].model_copy(update={"content": messages[-1].content + " "})
        return messages

    monkeypatch.setattr(engine.judge, "assess_messages", changed_on_turn_3)
    with pytest.raises(CassetteMiss):
        asyncio.run(replay(cassette_path, tmp_path / "r.sqlite"))
    store = Store(tmp_path / "r.sqlite")
    run = store.runs()[0]
    assert run["status"] == "crashed" and "CassetteMiss" in run["reason"]
    assert [row["turn"] for row in store.rows("turns", run["run_id"])] == [1, 2]


def test_a_replay_identical_to_its_recording_keeps_the_recorded_row_digest(cassette_path, tmp_path):
    """The digest a replay reports is the one a fresh reading of its rows gives: taken from the
    recording only when the rows hash alike (``runner.recorded_digest``)."""
    recorded = Cassette(cassette_path, RecordMode.none)
    outcome = asyncio.run(replay(cassette_path, tmp_path / "r.sqlite"))
    fresh = row_digest(trajectory_rows(Store(tmp_path / "r.sqlite"), outcome.run_id))
    assert outcome.identical and outcome.check.actual_digest == fresh == recorded.summary["rows"]


@pytest.mark.parametrize("summary_edit", ["hash", "digest", "both"])
def test_a_replay_whose_rows_differ_from_the_summary_makes_its_own_digest(cassette_path, tmp_path,
                                                                          summary_edit):
    """A summary (checksummed again, so the cassette reads) whose rows hash or digest the replay
    does not reproduce: the replay's digest is made from its rows, and it says where they differ."""
    lines = gzip.decompress(cassette_path.read_bytes()).decode().splitlines()
    summary = json.loads(lines[-1])
    del summary["checksum"]
    if summary_edit in ("hash", "both"):
        summary["turn_rows_hash"] = "0" * 32
    if summary_edit in ("digest", "both"):
        summary["rows"] = {"columns": {}, "units": {}}
    edited = tmp_path / cassette_path.name
    edited.write_bytes(gzip.compress(("\n".join([*lines[:-1], record_line(summary)]) + "\n").encode()))
    outcome = asyncio.run(replay(edited, tmp_path / "r.sqlite"))
    fresh = row_digest(trajectory_rows(Store(tmp_path / "r.sqlite"), outcome.run_id))
    kept = summary_edit == "digest"
    assert outcome.identical is kept
    assert outcome.check.actual_digest == (summary["rows"] if kept else fresh)
    if not kept:
        assert outcome.check.where == ("rows agree; the run's own fields differ" if summary_edit == "hash"
                                       else "table turns: not in the recording")
