"""Any OpenAI-compatible chat server (``vllm serve``, llama.cpp's server), JSON-Schema-constrained.

The server address comes from ``$VCRIME_OPENAI_BASE_URL`` (or the variable named by
``options.base_url_env``), else ``options.base_urls`` (a pool of servers serving the same model,
see :mod:`vcrime_audit.backends.pool`), else ``options.base_url``; the API key from the variable
named by ``options.api_key_env``. Neither the key nor the host and port enter the fingerprint or the cassette,
and every error message is scrubbed (vcrime_audit.scrub) before it is raised.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpx2 as httpx

from ..canonical import canonical_json
from ..models import ModelEntry
from ..scrub import register_entry
from .base import BackendError, GenerateRequest, GenerateResult
from .openai_wire import (
    START_HINT,
    TRANSIENT_STATUS,
    _error,
    backoff_delay,
    chat_body,
    parse_chat_response,
    parse_options,
    served_model,
    server_model_fingerprint,
)
from .pool import OUT_STATUS, Server, ServerPool, check_urls

MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The most a server's answer to one call may hold (decoded): a chat completion is kilobytes."""


class Answer:
    """A server's whole answer to a POST: what :meth:`_Endpoint.check` and the retry loops read."""

    def __init__(self, status_code: int, headers: httpx.Headers, content: bytes) -> None:
        self.status_code, self.headers, self.content = status_code, headers, content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


def _take(content: bytearray, chunk: bytes, url: str) -> None:
    content += chunk
    if len(content) > MAX_ANSWER_BYTES:
        raise _error(f"{url} answered with more than {MAX_ANSWER_BYTES} bytes; fix: check that the "
                     "address is the model server's")


class _Endpoint:
    """One model's server: address, auth and the retry loop around each HTTP request."""

    def __init__(self, entry: ModelEntry) -> None:
        self.entry = entry
        register_entry(entry)
        self.options = parse_options(entry)
        if not entry.weights.served_name:
            raise _error(f"model '{entry.name}' ({entry.source_file}): weights.served_name is "
                               "empty; fix: set it to the model name the server reports at /v1/models")
        self.served_name = entry.weights.served_name
        urls = self._urls()
        self.pool = ServerPool(urls, self.options.backoff_s, self.options.max_backoff_s) \
            if len(urls) > 1 else None
        self.base_url = urls[0].rstrip("/")
        if urlsplit(self.base_url).scheme not in ("http", "https"):
            raise _error(f"model '{entry.name}': server address '{self.base_url}' is not an "
                               "http(s) URL; fix: use http://HOST:PORT/v1")

    def _urls(self) -> list[str]:
        entry = self.entry
        base = os.environ.get(self.options.base_url_env)
        if not base and self.options.base_urls is not None:
            try:
                return check_urls(self.options.base_urls, f"model '{entry.name}' ({entry.source_file})")
            except ValueError as exc:
                raise _error(str(exc)) from None
        base = base or self.options.base_url
        if not base:
            raise _error(f"model '{entry.name}' ({entry.source_file}): no server address; fix: "
                         f"set ${self.options.base_url_env}, options.base_url or options.base_urls, "
                         "e.g. http://127.0.0.1:8080/v1")
        return [base]

    def headers(self) -> dict[str, str]:
        key = os.environ.get(self.options.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def timeout(self, seconds: float | None = None) -> httpx.Timeout:
        """httpx's timeouts (each read, the connection) of ``seconds``, by default ``options.timeout_s``."""
        seconds = self.options.timeout_s if seconds is None else seconds
        return httpx.Timeout(seconds, connect=min(10.0, seconds))

    def _whole_answer_timeout(self) -> httpx.ReadTimeout:
        return httpx.ReadTimeout(f"no whole answer within options.timeout_s ({self.options.timeout_s:g} s)")

    async def send(self, client: httpx.AsyncClient, method: str, url: str,
                   body: dict[str, Any] | None = None, timeout_s: float | None = None) -> Answer:
        """Send the request and read the whole answer within ``timeout_s`` (default
        ``options.timeout_s``; httpx's timeouts bound each read, so a server that trickles its
        answer would hold the call for good: it is a timed-out attempt, retried as one), of at
        most :data:`MAX_ANSWER_BYTES`."""
        limit = self.options.timeout_s if timeout_s is None else timeout_s

        async def whole() -> Answer:
            async with client.stream(method, url, json=body, headers=self.headers(),
                                     timeout=self.timeout(limit)) as response:
                content = bytearray()
                async for chunk in response.aiter_bytes():
                    _take(content, chunk, url)
                return Answer(response.status_code, response.headers, bytes(content))

        try:
            return await asyncio.wait_for(whole(), limit)
        except asyncio.TimeoutError:
            raise self._whole_answer_timeout() from None

    def get_whole(self, client: httpx.Client, url: str) -> Answer:
        """:meth:`send` of a GET, for the synchronous checks at startup (the deadline is checked
        as each piece of the answer arrives)."""
        deadline = time.monotonic() + self.options.timeout_s
        with client.stream("GET", url, headers=self.headers()) as response:
            content = bytearray()
            for chunk in response.iter_bytes():
                _take(content, chunk, url)
                if time.monotonic() > deadline:
                    raise self._whole_answer_timeout()
            return Answer(response.status_code, response.headers, bytes(content))

    def check(self, response: httpx.Response | Answer, url: str) -> Any:
        if response.status_code in (401, 403):
            raise _error(f"{url} refused the request ({response.status_code}); fix: set "
                               f"${self.options.api_key_env} to the server's API key "
                               "(options.api_key_env names the variable)")
        if response.status_code == 404:
            raise _error(f"{url} not found (404); fix: the base URL usually ends in /v1 "
                               f"(now {self.base_url})")
        if response.status_code >= 400:
            raise _error(f"{url} rejected the request ({response.status_code}): "
                               f"{response.text[:500]}")
        try:
            return response.json()
        except ValueError:
            raise _error(f"{url} answered with non-JSON: {response.text[:300]}") from None

    def give_up(self, url: str, last: str, status: int | None) -> BackendError:
        attempts = self.options.max_retries + 1
        if status is None:
            return _error(f"{url}: no answer after {attempts} attempt(s) ({last}); fix: check "
                                f"that the server is up, or {START_HINT}; a slow server may need a "
                                f"larger options.timeout_s (now {self.options.timeout_s:g} s)")
        return _error(f"{url}: HTTP {status} on all {attempts} attempt(s): {last}; fix: see "
                            "the server's log; a request the server cannot parse (e.g. "
                            "response_format) needs options.response_format json_object (llama.cpp) "
                            "or json_schema (vLLM)")

    def get_sync(self, path: str) -> Any:
        url = self.base_url + path
        last, status = "", None
        with httpx.Client(timeout=self.timeout()) as client:
            for attempt in range(self.options.max_retries + 1):
                if attempt:
                    time.sleep(backoff_delay(attempt - 1, self.options))
                try:
                    response = self.get_whole(client, url)
                except httpx.TransportError as exc:
                    last, status = f"{type(exc).__name__}: {exc}", None
                    continue
                if response.status_code in TRANSIENT_STATUS:
                    last, status = response.text[:300], response.status_code
                    continue
                return self.check(response, url)
        raise self.give_up(url, last, status)

    def server_models(self) -> dict[str, Any]:
        """What the server (every answering server of a pool, alike) reports for the model."""
        if self.pool is None:
            return server_model_fingerprint(self.get_sync("/models"), self.served_name,
                                            self.base_url + "/models")
        if self.pool.expected is not None:
            return self.pool.expected
        reports, last = self._pool_listings()
        if not reports:
            raise _error(f"model '{self.entry.name}' ({self.entry.source_file}): no server of "
                         f"options.base_urls answered GET /models after {self.options.max_retries + 1} "
                         f"round(s) ({'; '.join(f'{u}: {e}' for u, e in last.items())}); fix: start "
                         f"them, or {START_HINT}")
        if len({canonical_json(r) for r in reports.values()}) > 1:
            seen = "; ".join(f"{u} reports {canonical_json(r)[:200]}" for u, r in reports.items())
            raise _error(f"model '{self.entry.name}' ({self.entry.source_file}): the servers of "
                         f"options.base_urls report different models ({seen}); fix: serve the same "
                         f"weights under the name '{self.served_name}' on every server (vllm serve "
                         f"MODEL --served-model-name {self.served_name}), or make one model entry "
                         "per model")
        expected = next(iter(reports.values()))
        if "missing" in expected:
            raise _error(f"{next(iter(reports))}/models does not serve '{self.served_name}' (it "
                         f"serves: {', '.join(expected['ids']) or 'nothing'}); fix: set "
                         "weights.served_name to one of those or start the servers with that name")
        for server in self.pool.servers:
            if server.url not in reports:
                self.pool.take_out(server, last.get(server.url, "no answer at startup"))
        self.pool.expected = expected
        return expected

    def _pool_listings(self) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """GET /models from each server of the pool, in rounds until one answers."""
        assert self.pool is not None
        reports: dict[str, dict[str, Any]] = {}
        last: dict[str, str] = {}
        with httpx.Client(timeout=self.timeout()) as client:
            for attempt in range(self.options.max_retries + 1):
                if attempt:
                    time.sleep(backoff_delay(attempt - 1, self.options))
                for server in self.pool.servers:
                    url = server.url + "/models"
                    try:
                        response = self.get_whole(client, url)
                    except httpx.TransportError as exc:
                        last[server.url] = f"{type(exc).__name__}: {exc}"
                        continue
                    if response.status_code in TRANSIENT_STATUS:
                        last[server.url] = f"HTTP {response.status_code}"
                        continue
                    reports[server.url] = served_model(self.check(response, url), self.served_name, url)
                if reports:
                    break
        return reports, last

    async def probe(self, client: httpx.AsyncClient, server: Server) -> str:
        """A pool server's health check: '' when it answers GET /models with the pool's model."""
        url = server.url + "/models"
        try:
            response = await self.send(client, "GET", url, timeout_s=min(10.0, self.options.timeout_s))
        except httpx.TransportError as exc:
            return f"health check: {type(exc).__name__}"
        except BackendError as exc:
            return f"health check: {str(exc)[:200]}"
        if response.status_code != 200:
            return f"health check: HTTP {response.status_code}"
        try:
            found = served_model(response.json(), self.served_name, url)
        except (ValueError, BackendError) as exc:
            return f"health check: {str(exc)[:200]}"
        if self.pool is not None and self.pool.expected is not None and found != self.pool.expected:
            return f"health check: it now serves another model ({canonical_json(found)[:200]})"
        return ""

    async def post_pool(self, client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Any:
        """POST to the least-busy healthy server; a failing one is taken out and the call goes
        to another (the budget: max_retries + 1 attempts per server)."""
        pool = self.pool
        assert pool is not None

        async def probe(server: Server) -> str:
            return await self.probe(client, server)

        budget = (self.options.max_retries + 1) * len(pool.servers)
        last = ""
        for attempt in range(budget):
            pool.start_probes(probe)
            server = pool.best()
            if server is None:
                await asyncio.sleep(pool.next_retry_in())
                await pool.probe_now(probe)
                server = pool.best()
                if server is None:
                    continue
            url = server.url + path
            server.in_flight += 1
            try:
                response = await self.send(client, "POST", url, body)
            except httpx.TransportError as exc:
                last = f"{url}: {type(exc).__name__}: {exc}"
                pool.take_out(server, f"{type(exc).__name__}: {exc}")
                continue
            finally:
                server.in_flight -= 1
            if response.status_code in OUT_STATUS:
                last = f"{url}: HTTP {response.status_code}: {response.text[:200]}"
                pool.take_out(server, f"HTTP {response.status_code}")
                continue
            pool.answered(server)
            if response.status_code in TRANSIENT_STATUS:
                last = f"{url}: HTTP {response.status_code}"
                await asyncio.sleep(backoff_delay(attempt, self.options,
                                                  response.headers.get("retry-after")))
                continue
            return self.check(response, url)
        raise _error(f"model '{self.entry.name}': no server of its pool answered after {budget} "
                     f"attempt(s) (last: {last}); servers: {pool.describe()}; fix: check that the "
                     f"servers are up, or {START_HINT}")

    async def post(self, client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> Any:
        if self.pool is not None:
            return await self.post_pool(client, path, body)
        url = self.base_url + path
        last, status, retry_after = "", None, None
        for attempt in range(self.options.max_retries + 1):
            if attempt:
                await asyncio.sleep(backoff_delay(attempt - 1, self.options, retry_after))
            try:
                response = await self.send(client, "POST", url, body)
            except httpx.TransportError as exc:
                last, status, retry_after = f"{type(exc).__name__}: {exc}", None, None
                continue
            if response.status_code in TRANSIENT_STATUS:
                last, status = response.text[:300], response.status_code
                retry_after = response.headers.get("retry-after")
                continue
            return self.check(response, url)
        raise self.give_up(url, last, status)


class OpenAIBackend:
    """Chat completions over HTTP; calls run concurrently (the server batches or queues them)."""

    name = "openai"

    def __init__(self, entries: dict[str, ModelEntry]) -> None:
        self.entries = entries
        self._endpoints: dict[str, _Endpoint] = {}
        self._fingerprints: dict[str, dict[str, Any]] = {}
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        for name, entry in entries.items():  # a pool is checked at startup: addresses, one model
            if entry.options.get("base_urls") is not None:
                endpoint = self._endpoint(name)
                if endpoint.pool is not None:
                    endpoint.server_models()

    def _endpoint(self, model: str) -> _Endpoint:
        if model not in self._endpoints:
            if model not in self.entries:
                raise _error(f"model '{model}' was not given to the openai backend")
            self._endpoints[model] = _Endpoint(self.entries[model])
        return self._endpoints[model]

    def fingerprint(self, model: str) -> dict[str, Any]:
        if model not in self._fingerprints:
            endpoint = self._endpoint(model)
            server_models = endpoint.server_models()
            self._fingerprints[model] = {
                "engine": "openai-compatible",
                "api_path": urlsplit(endpoint.base_url).path or "/",
                "served_name": endpoint.served_name,
                "server_models": server_models,
                "revision": endpoint.entry.revision,
                "response_format": endpoint.options.response_format,
                "extra_body": endpoint.options.extra_body,
            }
        return self._fingerprints[model]

    def _client_for_loop(self) -> httpx.AsyncClient:
        """One connection pool per event loop (``asyncio.run`` per episode makes new loops)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(limits=httpx.Limits(max_connections=64))
            self._client_loop = loop
        return self._client

    async def generate(self, request: GenerateRequest) -> GenerateResult:
        endpoint = self._endpoint(request.model)
        body = chat_body(request, endpoint.served_name, endpoint.options)
        started = time.perf_counter()
        data = await endpoint.post(self._client_for_loop(), "/chat/completions", body)
        text, finish, usage = parse_chat_response(data, endpoint.base_url + "/chat/completions")
        return GenerateResult(text=text, finish_reason="length" if finish == "length" else "stop",
                              usage=usage, seconds=round(time.perf_counter() - started, 4))

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()
        self._client_loop = None
