"""The scripted backend (benchmarks and tests only): valid, deterministic, parallel, replayable."""

import asyncio
import gzip
import json
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.committed import DEMO_RUN
from vcrime_audit.agents import attacker, judge, world_manager
from vcrime_audit.agents.calling import call_structured
from vcrime_audit.agents.render import full_view, visible_ids
from vcrime_audit.backends.base import BackendError, GenerateRequest, Message, Sampling
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.backends.scripted import Hints, ScriptedBackend
from vcrime_audit.engine import Engine, EpisodeLimits, Roles
from vcrime_audit.models import ModelEntry
from vcrime_audit.patch import PHASES

DEMO = DEMO_RUN


def entry(name: str = "scripted-a", **options) -> ModelEntry:
    return ModelEntry(name=name, backend="scripted", family=name, vendor="scripted", weights={},
                      options=options)


def request(seed: int = 1, content: str = "hello", schema=None) -> GenerateRequest:
    return GenerateRequest(role="attacker", call="plan", model="scripted-a",
                           messages=[Message(role="user", content=content)],
                           sampling=Sampling(seed=seed), output_schema=schema or attacker.plan_schema())


def test_same_request_same_answer_other_seed_or_prompt_other_answer():
    backend = ScriptedBackend({"scripted-a": entry()})
    first = backend.answer(request()).text
    assert backend.answer(request()).text == first
    assert backend.answer(request(seed=2)).text != first
    assert backend.answer(request(content="hello!")).text != first


def test_every_engine_call_gets_a_valid_answer_without_retries(demo_world):
    model = entry(truncate_rate=0.0)
    backend = ScriptedBackend({model.name: model})
    roles = Roles(model, model, model)
    records = []

    async def play() -> None:
        for seed in range(5):
            rec = await Engine(backend, roles, EpisodeLimits(max_turns=3)).turn(demo_world, seed)
            records.append(rec)

    asyncio.run(play())
    for rec in records:
        assert rec.action is not None and rec.judgment is not None and not rec.phase_errors
        assert all(c.ok and c.attempt == 0 for c in rec.calls)
        assert [c.call for c in rec.calls] == ["plan", "act", "assess", *PHASES]
        assert rec.action.actor in attacker.active_members(demo_world)
        assert set(rec.action.targets) <= set(visible_ids(demo_world))


def test_answers_are_about_as_long_as_the_embedded_models():
    """Mean answer length per call within a factor 2 of the committed demo cassette's."""
    recorded: dict[str, list[int]] = {}
    for line in gzip.open(DEMO, "rt"):
        record = json.loads(line)
        if record["type"] == "call" and record["request"]["attempt"] == 0:
            recorded.setdefault(record["request"]["call"], []).append(len(record["result"]["text"]))
    backend = ScriptedBackend({"scripted-a": entry(truncate_rate=0.0)})
    for line in gzip.open(DEMO, "rt"):
        record = json.loads(line)
        if record["type"] != "call" or record["request"]["attempt"]:
            continue
        call = record["request"]["call"]
        req = GenerateRequest.model_validate({**record["request"], "model": "scripted-a"})
        ours = [len(backend.answer(req.model_copy(update={"sampling": req.sampling.model_copy(
            update={"seed": s})})).text) for s in range(20)]
        theirs = sum(recorded[call]) / len(recorded[call])
        assert theirs / 2 <= sum(ours) / len(ours) <= theirs * 2, call


def test_judge_and_world_manager_schemas_parse(demo_world):
    backend = ScriptedBackend({"scripted-a": entry(truncate_rate=0.0)})
    action = attacker.Action(actor="alex", verb="walk", description="walk in", targets=["car_park"],
                             time_minutes=5)
    schemas = [(judge.JudgeOutput, judge.assess_schema(), judge.check_judgment)]
    schemas += [(world_manager.PhaseOutput, world_manager.phase_schema(demo_world, p),
                 world_manager.check_ops) for p in PHASES]
    for output_model, schema, check in schemas:
        for seed in range(10):
            records = []
            asyncio.run(call_structured(
                backend, entry(truncate_rate=0.0), role="judge", call="x", output_model=output_model,
                schema=schema, seed=seed, check=check, records=records,
                messages=judge.assess_messages(demo_world, action)))
            assert records[-1].ok and len(records) == 1


def test_hints_read_exits_positions_crew_and_open_checkpoints(demo_world):
    hints = Hints.read([Message(role="user", content=full_view(demo_world))])
    assert hints.exits["street"] == demo_world.neighbours("street")
    assert hints.crew == set(demo_world.members)
    assert hints.position["alex"] == demo_world.members["alex"].current_location
    # the server room (a checkpoint's place) and the service road, where the drive must end up
    assert hints.goals == {"server_room", "street"}
    assert hints.step_towards_goal("car_park", hints.exits["car_park"]) == ["street"]
    assert hints.step_towards_goal("server_room", hints.exits["server_room"]) == []


def test_latency_is_simulated_with_unlimited_parallelism():
    backend = ScriptedBackend({"scripted-a": entry(latency_ms=200)})

    async def many() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(backend.generate(request(seed=s)) for s in range(50)))
        return time.perf_counter() - start

    assert 0.2 <= asyncio.run(many()) < 2.0  # 50 calls one after another would take 10 s


def test_registry_builds_it_and_fingerprint_names_it_without_latency():
    backend = make_backend("scripted", {"scripted-a": entry(latency_ms=5)})
    fingerprint = backend.fingerprint("scripted-a")
    assert "scripted" in fingerprint["engine"] and "latency_ms" not in fingerprint["options"]
    assert fingerprint == ScriptedBackend({"scripted-a": entry()}).fingerprint("scripted-a")
    with pytest.raises(BackendError, match="options.bogus"):
        make_backend("scripted", {"scripted-a": entry(bogus=1)})
    with pytest.raises(BackendError, match="no output schema"):
        backend.answer(request().model_copy(update={"output_schema": None}))


def test_a_scripted_episode_records_and_replays_identical(tmp_path, monkeypatch):
    from vcrime_audit.runner import RunConfig, replay, run_episode

    models = tmp_path / "models"
    models.mkdir()
    for name in ("scripted-a", "scripted-j"):
        data = {"name": name, "backend": "scripted", "family": name, "vendor": "scripted", "weights": {}}
        (models / f"{name}.yaml").write_text(yaml.safe_dump(data))
    monkeypatch.setenv("VCRIME_MODELS", str(models))
    config = RunConfig(attacker="scripted-a", judge="scripted-j", world_manager="scripted-j",
                       backend="scripted", max_turns=8)
    recorded = asyncio.run(run_episode(config, tmp_path / "run.sqlite", tmp_path / "cassettes"))
    assert recorded.turns >= 1 and recorded.model_calls >= 7 * recorded.turns
    again = asyncio.run(replay(recorded.cassette, tmp_path / "replay.sqlite"))
    assert again.identical and again.model_calls == 0


def _findall_over_the_text(text):
    """What Hints.read found before it matched line by line: each pattern over the whole text."""
    from vcrime_audit.backends import scripted

    return [pattern.findall(text) for pattern in
            (scripted._EXITS, scripted._AT, scripted._NAME, scripted._OPEN_CHECKPOINT)]


def _line_by_line(text):
    from vcrime_audit.backends import scripted

    items = scripted._items(text)
    return [[m if len(m) > 1 else m[0] for m in scripted._found(pattern, items)] for pattern in
            (scripted._EXITS, scripted._AT, scripted._NAME, scripted._OPEN_CHECKPOINT)]


def test_line_by_line_finds_what_findall_finds_in_every_tasks_views():
    from vcrime_audit.scenario import initial_world, list_task_ids, load_task

    for task_id in list_task_ids():
        text = full_view(initial_world(load_task(task_id)))
        assert _line_by_line(text) == _findall_over_the_text(text), task_id


PIECES = ["- ", "-", "\n", "\n\n", " ", "a", "b_1", "(", ")", "[", "]", ",", ";", ":", " exits ",
          ": exits a, b_1", " (A, guard) at b_1, alert", ") at a:", " [not met] reach a", "\r",
          "Crew members:", "x", "é"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_line_by_line_finds_what_findall_finds_in_any_text(text):
    assert _line_by_line(text) == _findall_over_the_text(text)


def test_a_name_with_no_closing_parenthesis_stops_at_its_line_end():
    """Found by the test above: over the whole text the name's class ran on into the next line
    (the hints are read line by line, so the scripted answers were never affected)."""
    assert _line_by_line("- exits (\n") == _findall_over_the_text("- exits (\n") == \
        [[], [], [("exits", "")], []]
