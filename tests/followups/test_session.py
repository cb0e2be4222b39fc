"""The shared driver: replay needs the same store inputs and the right kind of cassette; a replay
miss never calls a model; an error mid-way marks the follow-up as failed."""

import asyncio
import dataclasses
import shutil

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests.conftest import ScriptedBackend
from tests.followups.conftest import DEMO_RUN, judge_answer
from vcrime_audit.agents import prompting
from vcrime_audit.cassette import Cassette, CassetteError, CassetteMiss, RecordMode
from vcrime_audit.followups import session
from vcrime_audit.followups.annotate import Annotate
from vcrime_audit.followups.interrogate import MODES, Interrogate, InterrogateConfig
from vcrime_audit.followups.questionnaire import CONDITIONS
from vcrime_audit.followups.rejudge import Rejudge, RejudgeConfig
from vcrime_audit.store import Store

SECOND = "smollm2-135m-t07"


@pytest.fixture
def recorded(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    outcome = asyncio.run(session.record(
        Interrogate(), InterrogateConfig(min_turns=3, conditions=("CTRL", "A2")), store,
        backend_name="scripted", cassette_dir=tmp_path / "c", mode=RecordMode.all,
        inner=ScriptedBackend(lambda r: {"q1": "A", "q2": "A", "q3": "B"})))
    return store, outcome


def test_replay_into_a_store_with_other_runs_fails_before_any_call(recorded, tmp_path):
    store, outcome = recorded
    store.db.conn.execute("UPDATE turns SET description = 'something else' WHERE turn = 2")
    store.db.conn.commit()
    with pytest.raises(CassetteError, match="differ from those it was recorded on.*no model was called"):
        asyncio.run(session.replay(Interrogate(), outcome.cassette, store))


def test_a_cassette_of_another_kind_is_refused(recorded):
    store, outcome = recorded
    with pytest.raises(CassetteError, match="not a annotate cassette \\(it records interrogate\\)"):
        asyncio.run(session.replay(Annotate(), outcome.cassette, store))
    with pytest.raises(CassetteError, match="not a rejudge cassette \\(it records an episode\\)"):
        asyncio.run(session.replay(Rejudge(), DEMO_RUN, store))
    with pytest.raises(CassetteError, match="no such cassette"):
        asyncio.run(session.replay(Rejudge(), outcome.cassette.with_name("nope.jsonl.gz"), store))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.fixed_dictionaries({}, optional={
    "conditions": st.lists(st.sampled_from(sorted(CONDITIONS)), min_size=1, unique=True).map(tuple),
    "min_turns": st.integers(1, 3), "max_tokens": st.none() | st.integers(1, 4096),
    "mode": st.sampled_from(MODES), "interrogator": st.sampled_from(["", SECOND])}))
def test_another_configs_cassette_at_a_followups_place_is_one_line(recorded, tmp_path_factory, changes):
    """A copied or renamed cassette replayed as far as its answers fitted and its results were
    stored as the asked config's; now the first differing key is named and nothing is written."""
    store, outcome = recorded
    meta = Cassette(outcome.cassette, RecordMode.none).meta
    recorded_config = InterrogateConfig(**meta["config"])
    config = dataclasses.replace(recorded_config, **changes)
    assume(config != recorded_config)
    prepared = Interrogate().prepare(store, config)
    fid = session.followup_id("interrogate", session._config_json(config), prepared.inputs_hash)
    folder = tmp_path_factory.mktemp("other")
    shutil.copyfile(outcome.cassette, folder / f"{fid}.jsonl.gz")
    before = store.db.conn.execute("SELECT count(*) FROM followups").fetchone()

    with pytest.raises(CassetteError) as info:
        asyncio.run(session.record(Interrogate(), config, store, backend_name="scripted",
                                   cassette_dir=folder, mode=RecordMode.none))
    message = str(info.value)
    assert message.startswith(f"{folder / fid}.jsonl.gz: ") and "\n" not in message
    same_inputs = prepared.inputs_hash == meta["inputs_hash"]
    event(f"same inputs: {same_inputs}")
    if same_inputs:  # else the inputs' own line comes first (test_replay_into_a_store_with_other_runs...)
        asked, kept = session._config_json(config), session._config_json(recorded_config)
        first = next(k for k in sorted(asked) if asked[k] != kept[k])
        assert f"header.meta.config.{first} is {kept[first]!r}, but follow-up {fid} has " \
            f"{asked[first]!r}: the file is follow-up {outcome.followup_id}'s recording; fix: " in message
    assert store.db.conn.execute("SELECT count(*) FROM followups").fetchone() == before
    assert (folder / f"{fid}.jsonl.gz").read_bytes() == outcome.cassette.read_bytes()


def test_a_changed_template_is_a_replay_miss_with_a_diff(recorded, tmp_path, monkeypatch):
    store, outcome = recorded
    prompts = tmp_path / "prompts"
    shutil.copytree(prompting.PROMPTS_DIR, prompts)
    ask = prompts / "interrogate_ask.j2"
    ask.write_text(ask.read_text().replace("The goal:", "The aim:", 1))
    monkeypatch.setattr(prompting, "PROMPTS_DIR", prompts)
    prompting.environment.cache_clear()
    try:
        with pytest.raises(CassetteMiss) as info:
            asyncio.run(session.replay(Interrogate(), outcome.cassette, store))
    finally:
        prompting.environment.cache_clear()
    assert "-The goal:" in str(info.value) and "+The aim:" in str(info.value)
    row = store.db.conn.execute("SELECT status, reason FROM followups").fetchone()
    assert row[0] == "crashed" and "CassetteMiss" in row[1]


def test_every_attempt_is_recorded_with_its_item(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    answers = iter(["{", judge_answer(), judge_answer(), judge_answer()])
    asyncio.run(session.record(Rejudge(), RejudgeConfig(judge=SECOND, per_attacker=3), store,
                               backend_name="scripted", cassette_dir=tmp_path / "c",
                               mode=RecordMode.all, inner=ScriptedBackend(lambda r: next(answers))))
    calls = store.db.conn.execute("SELECT seq, item, attempt, ok, role, model FROM followup_calls "
                                  "ORDER BY seq").fetchall()
    run_id = store.runs()[0]["run_id"]
    assert [c[:4] for c in calls] == [(0, f"{run_id}:1", 0, 0), (1, f"{run_id}:1", 1, 1),
                                      (2, f"{run_id}:2", 0, 1), (3, f"{run_id}:3", 0, 1)]
    assert {(c[4], c[5]) for c in calls} == {("judge", SECOND)}
    row = store.db.conn.execute("SELECT kind, status, n_items, n_failed, backend FROM followups").fetchone()
    assert row == ("rejudge", "done", 3, 0, "scripted")
    models = dict(store.db.conn.execute("SELECT name, vendor FROM models").fetchall())
    assert models[SECOND] == "huggingface"


def test_an_unknown_judge_is_a_registry_error(demo_store, models_dir, tmp_path):
    from vcrime_audit.models import ModelError

    with pytest.raises(ModelError, match="unknown model 'nobody'"):
        asyncio.run(session.record(Rejudge(), RejudgeConfig(judge="nobody"), Store(demo_store),
                                   backend_name="local", cassette_dir=tmp_path / "c"))


class SlowBackend(ScriptedBackend):
    """Answers after a pause, counting how many requests are in flight at once."""

    def __init__(self, answer):
        super().__init__(answer)
        self.in_flight = self.most = 0

    async def generate(self, request):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(0.01)
        try:
            return await super().generate(request)
        finally:
            self.in_flight -= 1


def test_concurrency_changes_no_result(demo_store_file, models_dir, tmp_path):
    def answer(request):
        return {"q1": "A", "q2": "B" if "No user" in request.messages[-1].content else "A",
                "q3": "A" if "record of real events" in request.messages[-1].content else "C"}

    hashes, rows = [], []
    for concurrency in (1, 3):
        store = Store(shutil.copy(demo_store_file, tmp_path / f"c{concurrency}.sqlite"))
        backend = SlowBackend(answer)
        outcome = asyncio.run(session.record(
            Interrogate(), InterrogateConfig(min_turns=3), store, backend_name="scripted",
            cassette_dir=tmp_path / f"cassettes{concurrency}", mode=RecordMode.all, inner=backend,
            concurrency=concurrency))
        assert backend.most == concurrency and len(backend.calls) == 6
        hashes.append(outcome.rows_hash)
        rows.append(store.db.conn.execute("SELECT condition, answers FROM interrogations "
                                          "ORDER BY condition").fetchall())
        assert asyncio.run(session.replay(Interrogate(), outcome.cassette, store)).identical
    assert hashes[0] == hashes[1] and rows[0] == rows[1]
    with pytest.raises(ValueError, match="--concurrency must be at least 1"):
        asyncio.run(session.record(Interrogate(), InterrogateConfig(min_turns=3), store,
                                   backend_name="scripted", concurrency=0))
