"""The openai backend against a loopback server that misbehaves on purpose: an answer trickled a
byte at a time, one that never ends, and a small gzip body that inflates without bound. Each
ends the call with one clear error, in bounded time and memory; a well-formed answer sent
gzip-encoded reads as the same answer sent plain."""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib

import pytest

from vcrime_audit.backends.base import BackendError
from vcrime_audit.backends.openai import MAX_ANSWER_BYTES
from vcrime_audit.backends.registry import make_backend

from .server import JSONHandler
from .test_openai import SERVER_MODEL, color_request, entry, generate

ANSWER = {"choices": [{"message": {"content": '{"color": "blue"}'}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 9, "completion_tokens": 5}}


def _bomb(inflated: int) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    return b"".join([*(squeeze.compress(block) for _ in range(inflated >> 20)), squeeze.flush()])


class HostileServer:
    """Answers a chat call (POST) and the model listing (GET) in the way ``mode`` names; counts
    the POSTs it saw."""

    def __init__(self, mode: str) -> None:
        import http.server

        self.mode, self.posts, self.stop = mode, 0, threading.Event()
        server = self

        class Handler(JSONHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.posts += 1
                server.answer(self, ANSWER)

            def do_GET(self) -> None:
                server.answer(self, {"data": [{"id": "x"}], "note": "." * 100})

        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def answer(self, handler: JSONHandler, payload: dict) -> None:
        try:
            self._answer(handler, json.dumps(payload).encode())
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _answer(self, handler: JSONHandler, body: bytes) -> None:
        if self.mode in ("plain", "gzip"):
            encoded = gzip.compress(body) if self.mode == "gzip" else body
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            if self.mode == "gzip":
                handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(encoded)))
            handler.end_headers()
            handler.wfile.write(encoded)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if self.mode == "trickle":  # the answer, a byte every 50 ms: each read is quick
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            for byte in body:
                if self.stop.wait(0.05):
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
        elif self.mode == "endless":  # no length: the body ends when the connection does
            handler.end_headers()
            chunk = b" " * (1 << 20)
            while not self.stop.is_set():
                handler.wfile.write(chunk)
        elif self.mode == "bomb":
            bomb = _bomb(4 * MAX_ANSWER_BYTES)
            handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(bomb)))
            handler.end_headers()
            handler.wfile.write(bomb)

    def __enter__(self) -> HostileServer:
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.http.shutdown()
        self.http.server_close()


def _backend(server: HostileServer, monkeypatch, **options: object):
    monkeypatch.setenv("VCRIME_OPENAI_BASE_URL", server.base_url)
    return make_backend("openai", {SERVER_MODEL: entry(**{"max_retries": 1, "backoff_s": 0.05,
                                                          **options})})


@pytest.mark.parametrize("mode", ["plain", "gzip"])
def test_a_well_formed_answer_reads_the_same_sent_plain_or_gzip_encoded(monkeypatch, mode):
    with HostileServer(mode) as server:
        result = generate(_backend(server, monkeypatch), color_request())
    assert result.text == '{"color": "blue"}' and result.usage.completion_tokens == 5
    assert server.posts == 1


def test_an_answer_trickled_past_the_timeout_is_a_timed_out_attempt(monkeypatch):
    """Every read gets a byte within httpx's timeout, so only a deadline on the whole answer
    ends it: each attempt after timeout_s, then one error naming the option."""
    with HostileServer("trickle") as server:
        started = time.monotonic()
        with pytest.raises(BackendError) as error:
            generate(_backend(server, monkeypatch, timeout_s=1), color_request())
        took = time.monotonic() - started
    assert "no answer after 2 attempt(s) (ReadTimeout: no whole answer within options.timeout_s " \
           "(1 s))" in str(error.value), error.value
    assert server.posts == 2 and took < 20, took


@pytest.mark.parametrize("mode", ["endless", "bomb"])
def test_an_answer_larger_than_any_chat_completion_is_refused(monkeypatch, mode):
    """A body with no end, or 64 KB of gzip that inflates to 256 MiB: refused once it passes
    MAX_ANSWER_BYTES decoded, not read whole into memory."""
    with HostileServer(mode) as server:
        with pytest.raises(BackendError, match=f"answered with more than {MAX_ANSWER_BYTES} bytes; "
                                               "fix: check that the address is the model server's"):
            generate(_backend(server, monkeypatch, timeout_s=60), color_request())
    assert server.posts == 1


@pytest.mark.parametrize("mode", ["trickle", "endless"])
def test_the_model_listing_at_startup_is_bounded_too(monkeypatch, mode):
    """The fingerprint's GET /models reads its answer the same way: in time, and not past the cap."""
    with HostileServer(mode) as server:
        backend = _backend(server, monkeypatch, timeout_s=1, max_retries=0)
        with pytest.raises(BackendError) as error:
            backend.fingerprint(SERVER_MODEL)
    expected = ("no whole answer within options.timeout_s (1 s)" if mode == "trickle" else
                f"answered with more than {MAX_ANSWER_BYTES} bytes")
    assert expected in str(error.value), error.value
