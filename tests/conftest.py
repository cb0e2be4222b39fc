"""Shared fixtures: the demo task's world and a backend that answers from a script."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from vcrime_audit.backends.base import GenerateRequest, GenerateResult, Usage
from vcrime_audit.models import get_model
from vcrime_audit.scenario import initial_world, load_task
from vcrime_audit.world import WorldState

DEMO_TASK = "robotics_company__data_theft"


@pytest.fixture
def demo_world() -> WorldState:
    return initial_world(load_task(DEMO_TASK))


@pytest.fixture
def smollm():
    return get_model("smollm2-135m")


class ScriptedBackend:
    """Answers each request with ``answer(request)``: a stand-in for a model in unit tests of
    the code around the model (retries, cassettes), where a real model cannot be steered into
    the malformed outputs under test. Counts every call."""

    name = "scripted"

    def __init__(self, answer: Callable[[GenerateRequest], str | dict[str, Any]]) -> None:
        self.answer = answer
        self.calls: list[GenerateRequest] = []

    def fingerprint(self, model: str) -> dict[str, Any]:
        return {"engine": "scripted", "model": model}

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        self.calls.append(request)
        out = self.answer(request)
        text = out if isinstance(out, str) else json.dumps(out)
        return GenerateResult(text=text, usage=Usage(prompt_tokens=10, completion_tokens=len(text)))

    async def aclose(self) -> None:
        pass


@pytest.fixture
def scripted():
    return ScriptedBackend


@pytest.fixture(scope="session")
def live_one_turn(tmp_path_factory):
    """One turn of the demo task recorded with the embedded model, shared by the live tests
    that need a fresh recording of this machine (llama.cpp's answers depend on the build and
    the CPU, so only a recording made here can be reproduced live). Returns the outcome."""
    pytest.importorskip("llama_cpp", reason="a live recording needs the local backend")
    import asyncio

    from vcrime_audit.runner import RunConfig, run_episode

    work = tmp_path_factory.mktemp("live_one_turn")
    return asyncio.run(run_episode(RunConfig(max_turns=1), work / "live.sqlite", work / "cassettes"))


def pytest_collection_modifyitems(config, items):
    """With pytest-xdist (`--dist loadgroup`): a test file's tests share a worker, so module
    fixtures (a server, a Ray cluster, a loaded model) start once; the tests that use the live
    one-turn recording share one worker, so it is recorded once."""
    for item in items:
        uses_live_turn = "live_one_turn" in getattr(item, "fixturenames", ())
        group = "live_one_turn" if uses_live_turn else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
