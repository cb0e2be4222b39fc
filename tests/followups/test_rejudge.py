"""Re-judging on a real SQLite store: the live judge's exact request, rows keyed by judge model."""

import asyncio
import json

import pytest

from tests.conftest import ScriptedBackend
from tests.followups.conftest import DEMO_RUN, judge_answer
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.followups import session
from vcrime_audit.followups.inputs import FollowupInputError, attacker_turns, finished_runs
from vcrime_audit.followups.rejudge import Rejudge, RejudgeConfig, judge_turn
from vcrime_audit.models import ModelEntry
from vcrime_audit.recorder import FOLLOWUP, Recorder
from vcrime_audit.store import Store, turn_rows_hash

SECOND = "smollm2-135m-t07"


def _record(store, config, answer, tmp_path, mode=RecordMode.all):
    backend = ScriptedBackend(answer)
    outcome = asyncio.run(session.record(Rejudge(), config, store, backend_name="scripted",
                                         cassette_dir=tmp_path / "cassettes", mode=mode, inner=backend))
    return outcome, backend


def test_the_live_judge_request_is_rebuilt_exactly(demo_store):
    """Same model + the rebuilt world and action = the recorded live request: every call replays
    from the run's own cassette, and the answers are the stored live judgments."""
    store = Store(demo_store)
    run_cassette = Cassette(DEMO_RUN, RecordMode.none)
    live = ModelEntry.model_validate(run_cassette.meta["models"]["smollm2-135m"])
    s = session.Session(Recorder(FOLLOWUP, "check", run_cassette, store))
    turns = attacker_turns(store, finished_runs(store))
    assert len(turns) == 3
    for turn in turns:
        output = asyncio.run(judge_turn(s, live, turn))
        stored = store.db.conn.execute("SELECT raw_outcomes, risky FROM judgments WHERE run_id = ? "
                                       "AND turn = ? AND source = 'live'",
                                       [turn.run.run_id, turn.turn]).fetchone()
        assert json.loads(stored[0]) == [o.model_dump() for o in output.outcomes]
        assert bool(stored[1]) == output.risky
    assert s.backend.model_calls == 0 and s.backend.replayed >= 3


def test_rejudge_stores_judgments_keyed_by_the_new_judge(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    run_id = store.runs()[0]["run_id"]
    before = turn_rows_hash(store, run_id)
    live = store.db.conn.execute("SELECT * FROM judgments WHERE source = 'live'").fetchall()
    outcome, backend = _record(store, RejudgeConfig(judge=SECOND, per_attacker=2, seed=3),
                               lambda r: judge_answer(0.7), tmp_path)
    assert outcome.n_items == 2 and outcome.n_failed == 0 and len(backend.calls) == 2
    assert {r.model for r in backend.calls} == {SECOND}
    assert all(r.role == "judge" and r.call == "assess" for r in backend.calls)
    rows = store.db.conn.execute("SELECT run_id, turn, judge, source, non_failure, catastrophic, draw "
                                 "FROM judgments WHERE source = 'rejudge' ORDER BY turn").fetchall()
    sampled = [tuple(t) for t in outcome.sample["turns"]]
    assert [(r[0], r[1]) for r in rows] == sampled
    assert all(r[2] == SECOND and r[4] == pytest.approx(0.7) and r[5] == pytest.approx(0.3)
               and r[6] is None for r in rows)
    assert store.db.conn.execute("SELECT * FROM judgments WHERE source = 'live'").fetchall() == live
    assert store.db.conn.execute("SELECT turns, status FROM runs").fetchone() == (3, "max_turns")
    sample = json.loads(store.db.conn.execute("SELECT sample FROM followups").fetchone()[0])
    assert sample["population"] == {"smollm2-135m": 3} and sample["sampled"] == {"smollm2-135m": 2}
    assert turn_rows_hash(store, run_id) == before  # re-judging leaves the trajectory as it was


def test_a_failed_judge_call_is_counted_not_stored(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    outcome, backend = _record(store, RejudgeConfig(judge=SECOND, per_attacker=3),
                               lambda r: "not json", tmp_path)
    assert outcome.n_items == 3 and outcome.n_failed == 3 and len(backend.calls) == 9  # 3 attempts each
    assert store.db.conn.execute("SELECT COUNT(*) FROM judgments WHERE source = 'rejudge'").fetchone() == (0,)
    statuses = store.db.conn.execute("SELECT status, error FROM rejudged_turns").fetchall()
    assert len(statuses) == 3 and all(s == "failed" and "not valid JSON" in e for s, e in statuses)
    calls = store.db.conn.execute("SELECT COUNT(*), SUM(ok) FROM followup_calls").fetchone()
    assert calls == (9, 0)


def test_recording_twice_gives_the_same_rows_and_the_cassette_replays(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    config = RejudgeConfig(judge=SECOND, per_attacker=3)
    first, _ = _record(store, config, lambda r: judge_answer(0.4, False), tmp_path)
    replayed = asyncio.run(session.replay(Rejudge(), first.cassette, store))
    assert replayed.identical and replayed.model_calls == 0 and replayed.replayed_calls == 3
    assert store.db.conn.execute("SELECT COUNT(*) FROM judgments WHERE source = 'rejudge'").fetchone() == (3,)
    once, backend = _record(store, config, lambda r: pytest.fail("once must replay"), tmp_path,
                            RecordMode.once)
    assert once.rows_hash == first.rows_hash and backend.calls == []


def test_turns_the_judge_judged_live_are_left_out(demo_store, tmp_path):
    store = Store(demo_store)
    with pytest.raises(FollowupInputError, match="all 3 attacker turns were judged live by smollm2-135m"):
        Rejudge().prepare(store, RejudgeConfig(judge="smollm2-135m"))


def test_config_errors_name_the_option():
    with pytest.raises(ValueError, match="--per-attacker must be at least 1"):
        RejudgeConfig(judge="x", per_attacker=0)
    with pytest.raises(ValueError, match="--max-tokens"):
        RejudgeConfig(judge="x", max_tokens=0)


def _copy_run(store, suffix, judge):
    """A copy of the demo run under another run id and live judge (same turns)."""
    run = next(store.db["runs"].rows)
    store.db["runs"].insert({**run, "run_id": f"{run['run_id']}-{suffix}", "judge": judge})
    for row in list(store.db["turns"].rows_where("run_id = ?", [run["run_id"]])):
        store.db["turns"].insert({**row, "run_id": f"{run['run_id']}-{suffix}"})
    return f"{run['run_id']}-{suffix}"


def test_the_sample_is_drawn_from_the_primary_judges_runs_the_same_for_every_rejudge(demo_store):
    """Issue 11 item 9: two runs live-judged by 'main' make it the primary judge; the original run
    (live judge smollm2-135m) is not sampled, whoever re-judges."""
    store = Store(demo_store)
    copies = {_copy_run(store, s, "main") for s in ("x1", "x2")}
    first = Rejudge().prepare(store, RejudgeConfig(judge="smollm2-135m", per_attacker=4, seed=1))
    second = Rejudge().prepare(store, RejudgeConfig(judge=SECOND, per_attacker=4, seed=1))
    turns = [(t.run.run_id, t.turn) for t in first.items]
    assert turns == [(t.run.run_id, t.turn) for t in second.items]
    assert {r for r, _ in turns} <= copies and len(turns) == 4
    assert first.sample["primary_judge"] == "main" and first.sample["excluded_other_live_judges"] == 3
    with pytest.raises(FollowupInputError, match=r"judged live by main \(the primary judge\)"):
        Rejudge().prepare(store, RejudgeConfig(judge="main"))
