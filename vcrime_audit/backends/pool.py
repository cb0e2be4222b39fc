"""A pool of OpenAI-compatible servers serving one model (``options.base_urls``).

Each call goes to the healthy server with the fewest calls in flight (ties: the first listed, so
a run's consecutive calls stay on one server and reuse its prompt cache; on a server that reuses
it, an answer can depend on the calls before it there: README, "Does a backend reproduce its own
recording?"). A server whose request fails (no connection, a reset, HTTP 5xx) is taken out and
the call is retried on another one at once; a server taken out is probed again (``GET /models``,
which must still list the pool's model) after a backoff that doubles with each failure, from
``options.backoff_s`` up to ``options.max_backoff_s``, and comes back when the probe succeeds. A
call fails only when every attempt of its budget failed: ``(options.max_retries + 1)`` x the
number of servers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

OUT_STATUS = frozenset({500, 502, 503, 504})
"""Answers that take a server out of the pool (408 and 429 only delay the call)."""


@dataclass
class Server:
    url: str
    in_flight: int = 0
    healthy: bool = True
    failures: int = 0
    """Consecutive failures (requests and probes); reset by a success."""
    retry_at: float = 0.0
    calls: int = 0
    """Answers this server gave (any status that did not take it out)."""
    errors: int = 0
    """Requests and probes that failed on this server."""
    last_error: str = ""
    probing: bool = field(default=False, repr=False)


def check_urls(urls: list[str], where: str) -> list[str]:
    """The pool's URLs without trailing slashes and repeats; a problem raises ValueError naming
    ``where`` (the entry), the URL and the fix."""
    if not urls:
        raise ValueError(f"{where}: options.base_urls is empty; fix: list the servers, e.g. "
                         "base_urls: [http://10.0.0.1:8000/v1, http://10.0.0.2:8000/v1], or drop it "
                         "and set options.base_url")
    cleaned: list[str] = []
    for index, url in enumerate(urls):
        parts = urlsplit(str(url).strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{where}: options.base_urls[{index}] '{url}' is not an http(s) URL "
                             "with a host; fix: write it as http://HOST:PORT/v1")
        try:
            parts.port  # noqa: B018 - raises on a port that is not a number
        except ValueError:
            raise ValueError(f"{where}: options.base_urls[{index}] '{url}' has a malformed port; "
                             "fix: write it as http://HOST:PORT/v1") from None
        url = str(url).strip().rstrip("/")
        if url not in cleaned:
            cleaned.append(url)
    paths = {urlsplit(u).path or "/" for u in cleaned}
    if len(paths) > 1:
        raise ValueError(f"{where}: options.base_urls end in different API paths "
                         f"({', '.join(sorted(paths))}); fix: give every server the same path, e.g. /v1")
    return cleaned


class ServerPool:
    def __init__(self, urls: list[str], backoff_s: float, max_backoff_s: float) -> None:
        self.servers = [Server(u) for u in urls]
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.expected: dict[str, Any] | None = None
        """The model fingerprint every server must report (set at startup)."""
        self._probes: set[asyncio.Task[None]] = set()

    def best(self) -> Server | None:
        healthy = [s for s in self.servers if s.healthy]
        return min(healthy, key=lambda s: s.in_flight) if healthy else None

    def take_out(self, server: Server, reason: str) -> None:
        server.healthy = False
        server.errors += 1
        server.failures += 1
        server.last_error = reason
        delay = min(self.backoff_s * 2 ** (server.failures - 1), self.max_backoff_s)
        server.retry_at = time.monotonic() + delay

    def bring_back(self, server: Server) -> None:
        server.healthy, server.failures, server.last_error = True, 0, ""

    def answered(self, server: Server) -> None:
        server.calls += 1
        server.failures = 0

    def due(self) -> list[Server]:
        now = time.monotonic()
        return [s for s in self.servers if not s.healthy and not s.probing and s.retry_at <= now]

    def next_retry_in(self) -> float:
        waiting = [s.retry_at for s in self.servers if not s.healthy and not s.probing]
        return max(0.0, min(waiting) - time.monotonic()) if waiting else 0.0

    def start_probes(self, probe: Any) -> None:
        """Probe, in the background, every server whose backoff has passed."""
        for server in self.due():
            server.probing = True
            task = asyncio.ensure_future(self._probe(server, probe))
            self._probes.add(task)
            task.add_done_callback(self._probes.discard)

    async def probe_now(self, probe: Any) -> None:
        """Probe the due servers and wait for their answers and for the probes already running
        (when no server is healthy)."""
        due = self.due()
        for server in due:
            server.probing = True
        loop = asyncio.get_running_loop()
        running = [t for t in self._probes if not t.done() and t.get_loop() is loop]
        await asyncio.gather(*(self._probe(s, probe) for s in due), *running, return_exceptions=True)

    async def _probe(self, server: Server, probe: Any) -> None:
        try:
            problem = await probe(server)
        finally:
            server.probing = False
        if problem:
            self.take_out(server, problem)
        else:
            self.bring_back(server)

    def describe(self) -> str:
        return ", ".join(f"{s.url} ({'up' if s.healthy else 'out: ' + s.last_error[:120]})"
                         for s in self.servers)
