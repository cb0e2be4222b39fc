"""A pool of OpenAI-compatible servers for one model entry (``options.base_urls``): bad entries
fail at startup with one line; two real llama.cpp servers on loopback serve a study, one is
killed mid-call and the study finishes with every call recorded once."""

from __future__ import annotations

import asyncio
import http.server
import json
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from vcrime_audit.backends.pool import ServerPool, check_urls
from vcrime_audit.backends.registry import make_backend
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cli import app
from vcrime_audit.models import get_model
from vcrime_audit.store import Store
from vcrime_audit.study import StudyConfig, grid, run_study
from vcrime_audit.verify import Verifier

from .server import JSONHandler, free_port, llama_server

BASE = "smollm2-135m-server"
PROJECT_MODELS = Path(__file__).resolve().parents[2] / "local_models"
POOL = "smollm2-135m-pool"


class ModelList:
    """A real HTTP server on 127.0.0.1 that answers GET /v1/models with the given model ids and
    every chat completion with the same short answer (after ``delay`` seconds); it counts them."""

    def __init__(self, ids: list[str], delay: float = 0.0) -> None:
        payload = json.dumps({"object": "list", "data": [{"id": i, "object": "model", "owned_by": "me"}
                                                          for i in ids]}).encode()
        answer = json.dumps({"choices": [{"message": {"content": '{"color": "blue"}'},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 5, "completion_tokens": 4}}).encode()
        self.chats = 0
        owner = self

        class Handler(JSONHandler):
            def do_GET(self) -> None:
                self.reply(200 if self.path == "/v1/models" else 404, payload)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(delay)
                owner.chats += 1
                self.reply(200, answer)

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def write_pool_entry(folder: Path, urls: object, **options: object) -> Path:
    """A registry folder holding the pool entry: the embedded model's server entry with base_urls."""
    folder.mkdir(parents=True, exist_ok=True)
    data = get_model(BASE, PROJECT_MODELS).model_dump(mode="json", exclude={"source_file"})
    data["name"] = POOL
    data["options"] = {**data["options"], "base_urls": urls, **options}
    data["options"].pop("base_url", None)
    (folder / f"{POOL}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    return folder


def study_file(tmp_path: Path, seeds: list[int], concurrency: int = 1,
               task: str = "robotics_company__data_theft") -> Path:
    spec = StudyConfig(name="pool", attackers=[POOL], judge=POOL, world_manager=POOL, backend="openai",
                       tasks=[task], seeds=seeds, max_turns=1,
                       concurrency=concurrency, db=tmp_path / "study.sqlite",
                       cassette_dir=tmp_path / "cassettes")
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec.model_dump(mode="json")), encoding="utf-8")
    return path


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.delenv("VCRIME_OPENAI_BASE_URL", raising=False)

    def make(urls: object, **options: object) -> Path:
        folder = write_pool_entry(tmp_path / "models", urls, **options)
        monkeypatch.setenv("VCRIME_MODELS", str(folder))
        return folder
    return make


def one_error_line(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and not isinstance(result.exception, (KeyError, TypeError))
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


# --- without a model --------------------------------------------------------------------------

def test_pool_urls_are_checked_and_cleaned():
    assert check_urls(["http://a:1/v1/", "http://a:1/v1", "https://b/v1"], "e") == \
        ["http://a:1/v1", "https://b/v1"]
    for urls, words in (([], "options.base_urls is empty"),
                        (["http://a:1/v1", "a:1/v1"], "options.base_urls[1] 'a:1/v1' is not an http(s)"),
                        (["http://a:x/v1"], "malformed port"),
                        (["http://a:1/v1", "http://b:1/api"], "different API paths")):
        with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("(", r"\(")
                           .replace(")", r"\)")):
            check_urls(urls, "e")


def test_least_busy_healthy_server_is_chosen_and_a_failed_one_comes_back_after_its_backoff():
    pool = ServerPool(["http://a/v1", "http://b/v1", "http://c/v1"], backoff_s=0.05, max_backoff_s=1)
    a, b, c = pool.servers
    assert pool.best() is a
    a.in_flight, b.in_flight, c.in_flight = 2, 1, 1
    assert pool.best() is b
    pool.take_out(b, "ConnectError")
    assert pool.best() is c and not pool.due()
    pool.take_out(b, "ConnectError")  # a second failure doubles the wait
    assert 0.05 < pool.next_retry_in() <= 0.1
    time.sleep(0.11)
    assert pool.due() == [b]

    async def healthy(server):
        return ""
    asyncio.run(pool.probe_now(healthy))
    assert b.healthy and b.failures == 0 and pool.best() is b and b.errors == 2


@pytest.mark.parametrize("urls, words", [
    ([], "options.base_urls is empty; fix: list the servers"),
    (["http://127.0.0.1:8080/v1", "127.0.0.1:8081"], "options.base_urls[1] '127.0.0.1:8081' is not an "
                                                    "http(s) URL with a host; fix: write it as"),
])
def test_a_bad_pool_entry_is_one_error_line(registry, tmp_path, urls, words):
    registry(urls)
    line = one_error_line(["study", str(study_file(tmp_path, [0]))])
    assert f"model '{POOL}'" in line and words in line


def test_servers_reporting_different_models_are_one_error_line_naming_them(registry, tmp_path):
    same, other = ModelList(["smollm2-135m-instruct"]), ModelList(["qwen3-32b"])
    try:
        registry([same.base_url, other.base_url], max_retries=0)
        line = one_error_line(["study", str(study_file(tmp_path, [0]))])
    finally:
        same.close()
        other.close()
    assert "report different models" in line and same.base_url in line and other.base_url in line
    assert "qwen3-32b" in line
    assert "fix: serve the same weights under the name 'smollm2-135m-instruct'" in line


def test_a_pool_with_no_server_up_is_one_error_line(registry, tmp_path):
    urls = [f"http://127.0.0.1:{free_port()}/v1", f"http://127.0.0.1:{free_port()}/v1"]
    registry(urls, max_retries=1, backoff_s=0.01)
    line = one_error_line(["study", str(study_file(tmp_path, [0]))])
    assert "no server of options.base_urls answered GET /models" in line and all(u in line for u in urls)


# --- two real llama.cpp servers ---------------------------------------------------------------

@pytest.fixture
def two_servers(tmp_path):
    pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
    weights = get_model("smollm2-135m").weights_path()
    alias = get_model(BASE).weights.served_name
    with llama_server(weights, alias, tmp_path / "a.log", n_ctx=4096) as first, \
            llama_server(weights, alias, tmp_path / "b.log", n_ctx=4096) as second:
        yield first, second


@pytest.mark.live
def test_a_server_killed_mid_call_leaves_no_call_lost_or_recorded_twice(two_servers, registry, tiny_task,
                                                                       tmp_path):
    first, second = two_servers
    registry([first.base_url, second.base_url], backoff_s=0.2, max_backoff_s=2)
    spec = StudyConfig.model_validate(yaml.safe_load(study_file(tmp_path, [0], task=tiny_task).read_text()))
    backend = make_backend("openai", {POOL: get_model(POOL)})
    pool = backend._endpoint(POOL).pool
    a, b = pool.servers
    killed = threading.Event()

    def kill_first_mid_call() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not (a.calls >= 1 and a.in_flight >= 1):
            time.sleep(0.01)
        first.process.send_signal(signal.SIGKILL)
        killed.set()

    killer = threading.Thread(target=kill_first_mid_call, daemon=True)
    killer.start()
    result = asyncio.run(run_study(spec, backend=backend))
    asyncio.run(backend.aclose())
    assert killed.is_set() and not result.crashed and result.done == 1
    assert a.errors >= 1 and not a.healthy and b.calls >= 1
    [config] = grid(spec)
    cassette = Cassette(spec.cassette_dir / f"{config.run_id()}.jsonl.gz", RecordMode.none)
    store = Store(spec.db)
    stored_calls = store.rows("calls", config.run_id())
    # every answer a server gave is one recorded call and one stored call row: none lost or doubled
    assert len(cassette.calls) == a.calls + b.calls == result.outcomes[0].model_calls
    assert len(stored_calls) == len(cassette.calls)
    verifier = Verifier([spec.cassette_dir])
    try:
        assert not verifier.store(spec.db)
        assert [v.state for v in verifier.verdicts] == ["verified"]
    finally:
        verifier.close()


def test_the_pool_fingerprint_is_the_models_not_a_servers(registry):
    one, two = ModelList(["smollm2-135m-instruct"]), ModelList(["smollm2-135m-instruct"])
    base = get_model(BASE)
    try:
        registry([one.base_url, two.base_url])
        pooled = make_backend("openai", {POOL: get_model(POOL)}).fingerprint(POOL)
        single = make_backend("openai", {BASE: base.model_copy(update={"options": {
            **base.options, "base_url": two.base_url}})}).fingerprint(BASE)
    finally:
        one.close()
        two.close()
    assert pooled == single and "127.0.0.1" not in json.dumps(pooled)


def test_a_server_down_at_startup_is_taken_out_and_the_rest_serve(registry):
    up = ModelList(["smollm2-135m-instruct"])
    down = f"http://127.0.0.1:{free_port()}/v1"
    try:
        registry([down, up.base_url], max_retries=0)
        backend = make_backend("openai", {POOL: get_model(POOL)})
    finally:
        up.close()
    first, second = backend._endpoint(POOL).pool.servers
    assert not first.healthy and "ConnectError" in first.last_error and second.healthy


def test_the_readmes_cluster_entry_and_study_file_are_valid():
    from vcrime_audit.backends.openai_wire import OpenAIOptions
    from vcrime_audit.models import ModelEntry

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Running on a cluster\n", 1)[1].split("\n## ", 1)[0]
    entry_text, study_text = [part.split("```", 1)[0] for part in section.split("```yaml\n")[1:]]
    entry = ModelEntry.model_validate(yaml.safe_load(entry_text))
    options = entry.backend_options(OpenAIOptions)
    assert len(check_urls(options.base_urls, entry.name)) == 4
    study = StudyConfig.model_validate(yaml.safe_load(study_text))
    assert {study.judge, study.world_manager, *study.attackers} == {entry.name}
    assert study.backend == entry.backend == "openai"


def test_calls_spread_over_the_pool_and_move_off_a_server_that_stops(registry):
    from tests.backends.test_openai import color_request

    first, second = ModelList(["smollm2-135m-instruct"], 0.05), ModelList(["smollm2-135m-instruct"], 0.05)
    registry([first.base_url, second.base_url], backoff_s=0.05, max_backoff_s=0.2)
    backend = make_backend("openai", {POOL: get_model(POOL)})
    request = color_request().model_copy(update={"model": POOL})

    async def calls(n: int) -> list[str]:
        return [r.text for r in await asyncio.gather(*(backend.generate(request) for _ in range(n)))]

    async def play() -> tuple[list[str], list[str]]:
        try:
            together = await calls(4)
            first.close()  # the server goes away: its next call fails and moves to the other
            after = await calls(4)
            return together, after
        finally:
            await backend.aclose()

    try:
        together, after = asyncio.run(play())
    finally:
        second.close()
    assert together == after == ['{"color": "blue"}'] * 4
    a, b = backend._endpoint(POOL).pool.servers
    assert (first.chats, second.chats) == (2, 6), "4 at once go 2 and 2; after the stop all go to b"
    assert a.calls == 2 and b.calls == 6 and a.errors >= 1 and not a.healthy
