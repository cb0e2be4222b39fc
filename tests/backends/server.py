"""Real HTTP servers on 127.0.0.1 for backend tests: llama-cpp-python's OpenAI-compatible server,
and a proxy in front of it that fails the first N chat requests with a chosen status."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JSONHandler(http.server.BaseHTTPRequestHandler):
    """A quiet request handler for hand-made loopback servers: ``reply`` sends a JSON body."""

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, status: int, payload: dict | str | bytes) -> None:
        body = payload if isinstance(payload, bytes) else (
            payload if isinstance(payload, str) else json.dumps(payload)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@dataclass
class LlamaServer:
    process: subprocess.Popen[bytes]
    base_url: str
    log: Path
    api_key: str | None

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]


def _answers(url: str, api_key: str | None) -> bool:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with urllib.request.urlopen(request, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def llama_server(model: Path, alias: str, log: Path, api_key: str | None = None,
                 n_ctx: int = 8192, start_timeout_s: float = 180.0) -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` on a free port; yields once ``/v1/models`` answers."""
    port = free_port()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    if api_key:
        args += ["--api_key", api_key]
    base_url = f"http://127.0.0.1:{port}/v1"
    with open(log, "wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    server = LlamaServer(process, base_url, log, api_key)
    try:
        deadline = time.monotonic() + start_timeout_s
        while not _answers(base_url + "/models", api_key):
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited ({process.returncode}):\n{server.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server did not answer in {start_timeout_s} s:\n"
                                   f"{server.log_tail()}")
            time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class FlakyProxy:
    """Forwards to ``upstream`` but answers the first ``failures`` POSTs with ``status``;
    records (method, status, arrival time) of every request it saw."""

    def __init__(self, upstream: str, failures: int, status: int = 503,
                 retry_after: str | None = None) -> None:
        self.upstream, self.failures, self.status, self.retry_after = upstream, failures, status, retry_after
        self.seen: list[tuple[str, int, float]] = []
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FlakyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _forward(self, method: str, path: str, body: bytes | None,
                 headers: dict[str, str]) -> tuple[int, bytes]:
        url = self.upstream.rsplit("/v1", 1)[0] + path
        request = urllib.request.Request(url, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _reply(self, status: int, payload: bytes, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def _handle(self, method: str) -> None:
                arrived = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy._lock:
                    failing = method == "POST" and proxy.failures > 0
                    if failing:
                        proxy.failures -= 1
                if failing:
                    extra = {"Retry-After": proxy.retry_after} if proxy.retry_after else None
                    status, payload = proxy.status, b'{"error": "overloaded"}'
                    self._reply(status, payload, extra)
                else:
                    headers = {k: v for k, v in self.headers.items()
                               if k.lower() in ("authorization", "content-type")}
                    status, payload = proxy._forward(method, self.path, body, headers)
                    self._reply(status, payload)
                with proxy._lock:
                    proxy.seen.append((method, status, arrived))

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        return Handler
