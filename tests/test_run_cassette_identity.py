"""A cassette found at a run's place must be that run's recording.

Another run's cassette there (copied or renamed over it) replayed as itself, its world and answers
being its own, and its rows were stored under the other run's id with "identical turn rows":
a study counted one task twice and another not at all. Now the run stops in one line that names
the file, the first field of ``header.meta.config`` that differs, and the fix, and nothing is
written.
"""

import asyncio
import dataclasses
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.committed import DEMO_RUN
from vcrime_audit.cassette import Cassette, CassetteError, RecordMode
from vcrime_audit.cassette.persist import read_records, write_records
from vcrime_audit.runner import RunConfig, _from_meta, cassette_path, replay, run_episode
from vcrime_audit.scenario import list_task_ids

RECORDED = _from_meta(Cassette(DEMO_RUN, RecordMode.none))[0]
FIELDS = tuple(f.name for f in dataclasses.fields(RunConfig))
NAMES = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=24)
VALUES = {
    "task": st.sampled_from(list_task_ids()),
    "seed": st.integers(0, 2**63 - 1),
    "attacker": NAMES, "judge": NAMES, "world_manager": NAMES,
    "backend": st.sampled_from(["local", "openai", "vllm", "transformers", "scripted"]),
    "max_turns": st.integers(1, 200),
    "stall_turns": st.integers(1, 200),
}


@st.composite
def other_runs(draw) -> RunConfig:
    """The recorded run with one or more of its fields changed."""
    changed = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=len(FIELDS), unique=True))
    config = dataclasses.replace(RECORDED, **{name: draw(VALUES[name]) for name in changed})
    if config == RECORDED:
        config = dataclasses.replace(RECORDED, seed=RECORDED.seed + 1)
    return config


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=other_runs(), mode=st.sampled_from([RecordMode.none, RecordMode.once, RecordMode.new]))
def test_another_runs_cassette_at_a_runs_place_is_one_line_and_nothing_is_written(
        config, mode, tmp_path_factory):
    work = tmp_path_factory.mktemp("other")
    cassettes = work / "cassettes"
    cassettes.mkdir()
    place = cassette_path(config, cassettes)
    shutil.copyfile(DEMO_RUN, place)
    before = _files(cassettes)

    with pytest.raises(CassetteError) as info:
        asyncio.run(run_episode(config, work / "study.sqlite", cassettes, mode))

    message = str(info.value)
    first = next(name for name in FIELDS if getattr(config, name) != getattr(RECORDED, name))
    assert message.startswith(f"{place}: header.meta.config.{first} is {getattr(RECORDED, first)!r}")
    assert f"run {config.run_id()} has {getattr(config, first)!r}" in message
    assert f"the file is run {RECORDED.run_id()}'s recording; fix: " in message
    assert "\n" not in message
    assert _files(cassettes) == before and not (work / "study.sqlite").exists()


def test_the_runs_own_cassette_at_its_place_still_replays(tmp_path):
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    shutil.copyfile(DEMO_RUN, cassette_path(RECORDED, cassettes))
    outcome = asyncio.run(run_episode(RECORDED, tmp_path / "study.sqlite", cassettes, RecordMode.none))
    assert outcome.identical and outcome.run_id == RECORDED.run_id() and outcome.model_calls == 0


def test_a_header_whose_config_names_another_task_than_its_world_is_one_line(tmp_path):
    other = next(t for t in list_task_ids() if t != RECORDED.task)
    records = read_records(DEMO_RUN)
    records[0]["meta"]["config"]["task"] = other
    edited = dataclasses.replace(RECORDED, task=other)
    path = cassette_path(edited, tmp_path)
    write_records(path, records)  # checksums made anew: the file reads as sound

    with pytest.raises(CassetteError) as info:
        asyncio.run(replay(path, tmp_path / "r.sqlite"))
    assert str(info.value) == (
        f"{path}: header.meta.initial_world.task_id {RECORDED.task!r} is not "
        f"header.meta.config.task {other!r}; fix: re-record the cassette or restore it from git")
    assert not (tmp_path / "r.sqlite").exists()
