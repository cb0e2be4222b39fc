"""A certification against a real HTTP server on loopback whose judge calls fail: the failures are
recorded, the replay gives the identical certificate, and no secret reaches a file or the output."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading

import pytest
from typer.testing import CliRunner

from vcrime_audit.certify import store as cstore
from vcrime_audit.certify.run import CertifyConfig, replay_certification, run_certification
from vcrime_audit.cli import app
from vcrime_audit.store import Store

from ..backends.server import JSONHandler
from .scripted import WordEmbedder, target_answer

KEY = "sk-test-0123456789-SECRET"
PASSWORD = "hunter2-password"
SERVED = "smollm2-135m-instruct"


class Server:
    """Answers target calls with the scripted target; fails every judge call with a 400 whose body
    echoes the request's headers (as some proxies do)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        handler = self._handler()
        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.http.server_address[1]
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(JSONHandler):
            def do_GET(self) -> None:
                self.reply(200, {"object": "list", "data": [{"id": SERVED, "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                system = body["messages"][0]["content"]
                server.seen.append("judge" if "strict evaluator" in system else "target")
                if "strict evaluator" in system:
                    echoed = "; ".join(f"{k}: {v}" for k, v in self.headers.items())
                    return self.reply(400, f"bad request, headers were: {echoed}")
                from vcrime_audit.backends.base import GenerateRequest, Message, Sampling

                request = GenerateRequest(role="target", call="answer", model="m",
                                          sampling=Sampling(),
                                          messages=[Message(**m) for m in body["messages"]])
                text = target_answer(request)
                self.reply(200, {"choices": [{"message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5}})

        return Handler


def test_failed_judge_calls_replay_to_the_identical_certificate(tmp_path, monkeypatch, capsys):
    with Server() as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("VCRIME_OPENAI_BASE_URL",
                           f"http://tester:{PASSWORD}@127.0.0.1:{server.port}/v1")
        config = CertifyConfig(model="smollm2-135m-server", judge="smollm2-135m-server",
                               backend="openai", n=4, seed=3, max_length=2)
        outcome = asyncio.run(run_certification(config, tmp_path / "s.sqlite", tmp_path / "c",
                                                embedder=WordEmbedder()))
    assert "judge" in server.seen and "target" in server.seen
    cert = outcome.certificate
    assert cert.n_missing == 4, "every conversation had a failed judge call, so none is judged"
    replayed = asyncio.run(replay_certification(outcome.cassette, tmp_path / "replay.sqlite"))
    assert replayed.identical and replayed.model_calls == 0
    assert replayed.certificate == cert
    done = CliRunner().invoke(app, ["certify", "--replay", str(outcome.cassette),
                                    "--db", str(tmp_path / "cli.sqlite")])
    assert done.exit_code == 0 and "identical rows" in done.output, done.output
    printed = capsys.readouterr()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                import gzip
                data = gzip.decompress(data)
            assert KEY.encode() not in data and PASSWORD.encode() not in data, path
    for text in (done.output, printed.out, printed.err):
        assert KEY not in text and PASSWORD not in text
    rows = cstore.conversations(Store(tmp_path / "s.sqlite"), outcome.certification_id)
    errors = [t["judgments"]["llm"]["error"] for r in rows for t in json.loads(r["turns"])
              if t.get("judgments")]
    assert errors and all("Authorization: [scrubbed]" in e and "rejected the request (400)" in e
                          for e in errors)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
