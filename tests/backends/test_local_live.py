"""The real embedded model (SmolLM2-135M through llama-cpp-python), live, for a few calls."""

import asyncio

import pytest

from vcrime_audit.agents import attacker
from vcrime_audit.agents.calling import attempt_sampling, retry_conversation
from vcrime_audit.backends.base import GenerateRequest
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.runner import replay
from vcrime_audit.scenario import initial_world, load_task

pytest.importorskip("llama_cpp", reason="the local backend needs llama-cpp-python")
pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def backend():
    from vcrime_audit.backends.local import LocalBackend
    from vcrime_audit.models import get_model

    model = get_model("smollm2-135m")
    return LocalBackend({model.name: model}), model


def test_schema_constrained_act_call_is_valid_and_deterministic(backend, demo_world):
    local, model = backend
    request = GenerateRequest(role="attacker", call="act", model=model.name,
                              messages=attacker.act_messages(demo_world),
                              sampling=model.sampling_for("judge", seed=3),
                              output_schema=attacker.act_schema(demo_world))
    first = asyncio.run(local.generate(request))
    second = asyncio.run(local.generate(request))
    action = attacker.Action.model_validate_json(first.text)
    assert action.actor in demo_world.members and first.text == second.text
    assert first.usage.completion_tokens > 0 and first.finish_reason == "stop"
    fingerprint = local.fingerprint(model.name)
    assert fingerprint["engine"] == "llama-cpp-python" and len(fingerprint["weights"]["blake2b"]) == 32


def test_record_one_turn_live_then_replay_identically(live_one_turn, tiny_task, tmp_path):
    recorded = live_one_turn
    assert recorded.model_calls >= 2 and recorded.turns == 1
    cassette = Cassette(recorded.cassette, RecordMode.none)
    assert cassette.summary["turn_rows_hash"] == recorded.turn_rows_hash
    replayed = asyncio.run(replay(recorded.cassette, tmp_path / "replay.sqlite"))
    assert replayed.identical and replayed.model_calls == 0


def test_one_backend_serves_concurrent_calls_across_event_loops(backend, demo_world):
    local, model = backend
    short = model.sampling_for("judge", seed=1).model_copy(update={"max_tokens": 8})
    request = GenerateRequest(role="attacker", call="plan", model=model.name,
                              messages=attacker.plan_messages(demo_world), sampling=short)

    async def two():
        return await asyncio.gather(local.generate(request), local.generate(request))

    first = asyncio.run(two())
    second = asyncio.run(two())
    assert {r.text for r in first + second} == {first[0].text}


def test_a_retry_gets_the_answer_it_gets_when_sent_first(backend, tiny_task):
    """A retry's conversation begins with the first attempt's prompt and answer. llama-cpp-python
    kept those tokens in its KV cache and evaluated only the rest; their cached values (each
    generated token evaluated alone) differ from a fresh evaluation's (in one batch), so the retry
    got another answer than when it was sent first: after a crash between the two attempts, in
    ``check determinism``, or with another run's call in between. With the cache kept, here, the
    retry began ``{"memory": "..."The plan to`` after its first attempt and ``{"memory": "...
    "The plan to`` when sent first."""
    from vcrime_audit.backends.local import LocalBackend

    local, model = backend
    world = initial_world(load_task(tiny_task)).shallow_copy({"turn": 1})
    first = GenerateRequest(role="attacker", call="plan", model=model.name,
                            messages=attacker.plan_messages(world),
                            sampling=model.sampling_for("attacker", seed=1).model_copy(
                                update={"max_tokens": 8}),
                            output_schema=attacker.plan_schema())
    answer = asyncio.run(local.generate(first))
    assert answer.finish_reason == "length"
    retry = first.model_copy(update={
        "attempt": 1, "sampling": attempt_sampling(first.sampling, 1),
        "messages": retry_conversation(first.messages, answer.text, "output truncated at max_tokens")})
    after_first = asyncio.run(local.generate(retry)).text
    fresh = LocalBackend({model.name: model})
    try:
        sent_first = asyncio.run(fresh.generate(retry)).text
    finally:
        asyncio.run(fresh.aclose())
    assert after_first == sent_first
