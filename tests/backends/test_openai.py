"""The openai backend against a real OpenAI-compatible server (llama-cpp-python's) on 127.0.0.1,
a failing proxy in front of it, and a closed port."""

from __future__ import annotations

import asyncio
import gzip
import json
import secrets

import pytest

from vcrime_audit.agents import attacker
from vcrime_audit.backends.base import BackendError, GenerateRequest, Message, Sampling
from vcrime_audit.backends.openai import OpenAIBackend
from vcrime_audit.backends.openai_wire import (
    OpenAIOptions,
    backoff_delay,
    chat_body,
    response_format,
    server_model_fingerprint,
)
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.canonical import canonical_json
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.models import ModelEntry, get_model
from vcrime_audit.runner import RunConfig, replay, run_episode

from .server import FlakyProxy, free_port, llama_server

SERVER_MODEL = "smollm2-135m-server"
COLOR_SCHEMA = {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]}},
                "required": ["color"], "additionalProperties": False}


def entry(**options: object) -> ModelEntry:
    base = get_model(SERVER_MODEL)
    return base.model_copy(update={"options": {**base.options, **options}})


def color_request(seed: int = 0) -> GenerateRequest:
    return GenerateRequest(role="judge", call="color", model=SERVER_MODEL,
                           messages=[Message(role="user", content="Name one colour of the sky.")],
                           sampling=Sampling(max_tokens=24, seed=seed), output_schema=COLOR_SCHEMA)


def generate(backend: OpenAIBackend, request: GenerateRequest):
    async def go():
        try:
            return await backend.generate(request)
        finally:
            await backend.aclose()
    return asyncio.run(go())


# --- pure parts -------------------------------------------------------------------------------

def test_backoff_doubles_caps_and_honours_retry_after():
    options = OpenAIOptions(backoff_s=0.5, max_backoff_s=3.0)
    assert [backoff_delay(a, options) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff_delay(0, options, "2") == 2.0
    assert backoff_delay(0, options, "60") == 3.0
    assert backoff_delay(1, options, "Wed, 21 Oct 2015 07:28:00 GMT") == 1.0


def test_response_format_per_server_kind():
    assert response_format("json_object", COLOR_SCHEMA, "act") == {"type": "json_object",
                                                                   "schema": COLOR_SCHEMA}
    vllm = response_format("json_schema", COLOR_SCHEMA, "phase 2/assess")
    assert vllm == {"type": "json_schema", "json_schema": {"name": "phase_2_assess",
                                                           "schema": COLOR_SCHEMA, "strict": True}}


def test_chat_body_carries_sampling_and_server_options(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-in-the-body")
    options = OpenAIOptions(extra_body={"repeat_penalty": 1.0})
    body = chat_body(color_request(seed=7), "served", options)
    assert body["model"] == "served" and body["seed"] == 7 and body["max_tokens"] == 24
    assert body["repeat_penalty"] == 1.0 and body["response_format"]["schema"] == COLOR_SCHEMA
    assert "sk-never-in-the-body" not in json.dumps(body)


def test_server_listing_must_include_the_served_name():
    listing = {"data": [{"id": "b", "owned_by": "vllm", "max_model_len": 4096, "created": 17,
                         "root": "/home/x/model"}, {"id": "a"}]}
    assert server_model_fingerprint(listing, "b", "u") == {"ids": ["a", "b"], "owned_by": "vllm",
                                                           "max_model_len": 4096}
    with pytest.raises(BackendError, match="does not serve 'c'.*it serves: a, b"):
        server_model_fingerprint(listing, "c", "http://h/v1/models")


def test_bad_options_name_the_file_and_field():
    with pytest.raises(BackendError, match=r"smollm2-135m-server\.yaml\): options\.response_format"):
        OpenAIBackend({SERVER_MODEL: entry(response_format="grammar")}).fingerprint(SERVER_MODEL)
    with pytest.raises(BackendError, match="options.max_retires"):
        OpenAIBackend({SERVER_MODEL: entry(max_retires=2)}).fingerprint(SERVER_MODEL)


def test_no_address_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("VCRIME_OPENAI_BASE_URL", raising=False)
    with pytest.raises(BackendError, match=r"no server address; fix: set \$VCRIME_OPENAI_BASE_URL"):
        OpenAIBackend({SERVER_MODEL: entry(base_url=None)}).fingerprint(SERVER_MODEL)


def test_closed_port_retries_then_names_the_url_and_the_fix(monkeypatch):
    url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", url)
    backend = make_backend("openai", {SERVER_MODEL: entry(max_retries=2, backoff_s=0.05, timeout_s=2)})
    with pytest.raises(BackendError) as error:
        generate(backend, color_request())
    message = str(error.value)
    assert f"{url}/chat/completions: no answer after 3 attempt(s) (ConnectError" in message
    assert "llama_cpp.server" in message and "VCRIME_OPENAI_BASE_URL" in message
    with pytest.raises(BackendError, match=f"{url}/models: no answer after 3"):
        backend.fingerprint(SERVER_MODEL)


# --- a real server ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("llama_cpp.server.app",
                        reason="needs llama-cpp-python's server extras: pip install "
                               "'llama-cpp-python[server]' (uvicorn, fastapi, sse-starlette, ...)")
    key = "sk-test-" + secrets.token_hex(12)
    weights = get_model("smollm2-135m").weights_path()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with llama_server(weights, get_model(SERVER_MODEL).weights.served_name, log, api_key=key) as running:
        yield running


@pytest.fixture
def served(server, monkeypatch):
    monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", server.api_key)
    return server


@pytest.mark.live
def test_structured_call_follows_the_schema(served, demo_world):
    backend = OpenAIBackend({SERVER_MODEL: entry()})
    request = GenerateRequest(role="attacker", call="act", model=SERVER_MODEL,
                              messages=attacker.act_messages(demo_world),
                              sampling=get_model(SERVER_MODEL).sampling_for("judge", seed=3),
                              output_schema=attacker.act_schema(demo_world))
    result = generate(backend, request)
    action = attacker.Action.model_validate_json(result.text)
    assert action.actor in demo_world.members and result.finish_reason == "stop"
    assert result.usage.prompt_tokens > 100 and result.usage.completion_tokens > 0
    again = generate(backend, request)
    assert again.text == result.text


@pytest.mark.live
def test_fingerprint_names_the_server_model_not_the_host_or_key(served, monkeypatch):
    direct = OpenAIBackend({SERVER_MODEL: entry()}).fingerprint(SERVER_MODEL)
    assert direct["engine"] == "openai-compatible" and direct["api_path"] == "/v1"
    assert direct["server_models"] == {"ids": ["smollm2-135m-instruct"], "owned_by": "me"}
    text = canonical_json(direct)
    port = served.base_url.rsplit(":", 1)[1].split("/")[0]
    assert "127.0.0.1" not in text and port not in text and served.api_key not in text
    monkeypatch.delenv("VCRIME_OPENAI_BASE_URL")
    with FlakyProxy(served.base_url, failures=0) as proxy:
        via_other_port = OpenAIBackend({SERVER_MODEL: entry(base_url=proxy.base_url)})
        assert via_other_port.fingerprint(SERVER_MODEL) == direct
    assert [m for m, _, _ in proxy.seen] == ["GET"]


@pytest.mark.live
def test_wrong_api_key_fails_at_once_naming_the_variable(served, monkeypatch):
    monkeypatch.setenv("VCRIME_KEY_UNDER_TEST", "sk-wrong-key")
    with FlakyProxy(served.base_url, failures=0) as proxy:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", proxy.base_url)
        backend = OpenAIBackend({SERVER_MODEL: entry(api_key_env="VCRIME_KEY_UNDER_TEST")})
        refused = r"refused the request \(401\).*\$VCRIME_KEY_UNDER_TEST"
        with pytest.raises(BackendError, match=refused) as error:
            generate(backend, color_request())
    assert [s for _, s, _ in proxy.seen] == [401]
    assert "sk-wrong-key" not in str(error.value)


@pytest.mark.live
def test_json_schema_kind_is_refused_by_llama_cpp_with_the_servers_reason(served, monkeypatch):
    """llama-cpp-python answers a request it cannot parse with HTTP 500, which counts as
    transient; the final error carries the server's reason and the option to change."""
    with FlakyProxy(served.base_url, failures=0) as proxy:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", proxy.base_url)
        backend = OpenAIBackend({SERVER_MODEL: entry(response_format="json_schema", max_retries=1,
                                                     backoff_s=0.01)})
        with pytest.raises(BackendError) as error:
            generate(backend, color_request())
    message = str(error.value)
    assert message.startswith(f"{proxy.base_url}/chat/completions: HTTP 500 on all 2 attempt(s)")
    assert "json_object" in message.split("fix:")[0] and "options.response_format" in message
    assert [s for _, s, _ in proxy.seen] == [500, 500]


@pytest.mark.live
def test_503_twice_then_answer_with_exponential_backoff(served, monkeypatch):
    with FlakyProxy(served.base_url, failures=2, status=503) as proxy:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", proxy.base_url)
        backend = OpenAIBackend({SERVER_MODEL: entry(backoff_s=0.2, max_retries=3)})
        result = generate(backend, color_request())
    assert json.loads(result.text)["color"] in ("red", "green", "blue")
    posts = [(status, at) for method, status, at in proxy.seen if method == "POST"]
    assert [s for s, _ in posts] == [503, 503, 200]
    first_wait, second_wait = posts[1][1] - posts[0][1], posts[2][1] - posts[1][1]
    assert 0.2 <= first_wait < second_wait and second_wait >= 0.4


@pytest.mark.live
def test_429_waits_as_long_as_retry_after_says(served, monkeypatch):
    with FlakyProxy(served.base_url, failures=1, status=429, retry_after="0.6") as proxy:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", proxy.base_url)
        generate(OpenAIBackend({SERVER_MODEL: entry(backoff_s=0.01)}), color_request())
    posts = [(status, at) for method, status, at in proxy.seen if method == "POST"]
    assert [s for s, _ in posts] == [429, 200] and posts[1][1] - posts[0][1] >= 0.6


@pytest.mark.live
def test_persistent_503_gives_up_after_max_retries(served, monkeypatch):
    with FlakyProxy(served.base_url, failures=100, status=503) as proxy:
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", proxy.base_url)
        backend = OpenAIBackend({SERVER_MODEL: entry(backoff_s=0.01, max_retries=2)})
        with pytest.raises(BackendError, match=r'HTTP 503 on all 3 attempt\(s\): \{"error": "overloaded"\}'):
            generate(backend, color_request())
    assert [s for m, s, _ in proxy.seen if m == "POST"] == [503, 503, 503]


@pytest.mark.live
def test_record_one_turn_through_the_server_then_replay_without_it(served, tiny_task, tmp_path,
                                                                  monkeypatch):
    config = RunConfig(task=tiny_task, attacker=SERVER_MODEL, judge=SERVER_MODEL,
                       world_manager=SERVER_MODEL, backend="openai", max_turns=1, seed=11)
    recorded = asyncio.run(run_episode(config, tmp_path / "live.sqlite", tmp_path / "cassettes"))
    assert recorded.turns == 1 and recorded.model_calls >= 2
    raw = recorded.cassette.read_bytes()
    assert served.api_key.encode() not in raw and served.api_key.encode() not in gzip.decompress(raw)
    cassette = Cassette(recorded.cassette, RecordMode.none)
    fingerprint = cassette.fingerprint_for(SERVER_MODEL)
    assert fingerprint["engine"] == "openai-compatible" and len(cassette.calls) == recorded.model_calls

    monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    replayed = asyncio.run(replay(recorded.cassette, tmp_path / "replay.sqlite"))
    assert replayed.identical and replayed.model_calls == 0
    assert replayed.replayed_calls == recorded.model_calls
