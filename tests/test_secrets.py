"""Secrets never reach a file or the terminal: a real loopback server that echoes the request
headers in its error bodies, an API key in the environment and credentials in the base URL."""

from __future__ import annotations

import base64
import gzip
import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from vcrime_audit.scrub import PLACEHOLDER, Scrubber, scrub_obj, scrub_text

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-live-8f3a9c2e71d04b6a"
USER, PASSWORD = "svc-user", "hunter2-p4ssw0rd"
SERVED = "smollm2-135m-instruct"


class EchoHandler(BaseHTTPRequestHandler):
    """/v1/models lists the served model; every other request gets a 500 whose body echoes
    the request headers (as some proxies and servers do)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.endswith("/models"):
            self._send(200, json.dumps({"data": [{"id": SERVED, "owned_by": "test"}]}))
        else:
            self._echo()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self._echo()

    def _echo(self) -> None:
        self._send(500, "upstream failed; request headers were:\n" + str(self.headers) +
                   json.dumps(dict(self.headers)))

    def _send(self, status: int, body: str) -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", "application/json" if status == 200 else "text/plain")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _models_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "models"
    folder.mkdir()
    text = (ROOT / "local_models" / "smollm2-135m-server.yaml").read_text(encoding="utf-8")
    text = text.replace("name: smollm2-135m-server", "name: echo-server")
    text = text.replace("options:\n", "options:\n  max_retries: 1\n  backoff_s: 0.0\n  timeout_s: 5\n"
                        "  api_key_env: ECHO_TEST_KEY\n")
    (folder / "echo-server.yaml").write_text(text, encoding="utf-8")
    return folder


def _secrets() -> list[str]:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return [KEY, PASSWORD, basic]


def _everything_written(folder: Path) -> str:
    texts = []
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError):
                    pass
            texts.append(data.decode("utf-8", errors="replace"))
    return "\n".join(texts)


def _run(tmp_path: Path, base_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VCRIME_MODELS": str(_models_dir(tmp_path)),
           "ECHO_TEST_KEY": KEY, "VCRIME_OPENAI_BASE_URL": base_url}
    return subprocess.run(
        [sys.executable, "-m", "vcrime_audit.cli", "run", "--backend", "openai",
         "--attacker", "echo-server", "--judge", "echo-server", "--world-manager", "echo-server",
         "--max-turns", "1", "--db", str(tmp_path / "runs" / "s.sqlite"),
         "--cassette-dir", str(tmp_path / "cassettes")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)


def test_a_server_echoing_the_key_leaks_it_nowhere(tmp_path, echo_server):
    done = _run(tmp_path, f"http://{USER}:{PASSWORD}@127.0.0.1:{echo_server}/v1")
    printed = done.stdout + done.stderr
    assert done.returncode == 2, printed
    assert "HTTP 500" in printed and PLACEHOLDER in printed  # the error itself is shown
    assert "Traceback" not in printed
    written = _everything_written(tmp_path)
    assert "HTTP 500" in written  # runs.reason holds the (scrubbed) error
    for secret in _secrets():
        assert secret not in printed
        assert secret not in written


def test_credentials_in_an_unreachable_base_url_leak_nowhere(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _run(tmp_path, f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1")
    printed = done.stdout + done.stderr
    assert done.returncode == 2, printed
    assert "no answer" in printed and f"127.0.0.1:{port}" in printed
    assert "Traceback" not in printed
    for secret in _secrets():
        assert secret not in printed
        assert secret not in _everything_written(tmp_path)


def test_scrub_text_covers_each_kind(monkeypatch):
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "abcdefgh12345")
    scrubber = Scrubber(patterns=[r"acct-\d{6}"])
    text = ("key abcdefgh12345; url https://bob:pa55word@host.example/v1; "
            "Authorization: Bearer tok_9f8e7d6c5b; {'x-api-key': 'k9k9k9k9k9'}; account acct-123456")
    out = scrubber.scrub_text(text)
    for secret in ("abcdefgh12345", "bob:pa55word", "tok_9f8e7d6c5b", "k9k9k9k9k9", "acct-123456"):
        assert secret not in out
    assert "https://[scrubbed]@host.example/v1" in out


def test_scrubbing_leaves_plain_prose_alone():
    prose = "The guard checks the authorization: granted. Keycard access at 22:00 for the van."
    assert scrub_text(prose) == prose


def test_scrub_obj_is_a_deep_copy(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdef123456")
    record = {"error": "echo sk-abcdef123456", "nested": [{"k": "sk-abcdef123456"}], "n": 3}
    out = scrub_obj(record)
    assert out == {"error": f"echo {PLACEHOLDER}", "nested": [{"k": PLACEHOLDER}], "n": 3}
    assert record["nested"][0]["k"] == "sk-abcdef123456"


def test_a_model_entry_adds_scrub_patterns(tmp_path):
    from vcrime_audit.models import load_model_file

    folder = _models_dir(tmp_path)
    path = folder / "echo-server.yaml"
    path.write_text(path.read_text() + "scrub_patterns: ['tenant-[0-9a-f]{8}']\n")
    entry = load_model_file(path)
    assert entry.scrub_patterns == ["tenant-[0-9a-f]{8}"]
    assert scrub_text("id tenant-0badc0de ok") == f"id {PLACEHOLDER} ok"
    assert not Path(entry.source_file).is_absolute()


def test_a_recorded_model_entry_holds_no_absolute_path_or_secret(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from vcrime_audit.models import load_model_file

    monkeypatch.setenv("ECHO_TEST_KEY", KEY)
    folder = _models_dir(tmp_path)
    path = folder / "echo-server.yaml"
    text = path.read_text().replace("  served_name: smollm2-135m-instruct\n",
                                    f"  served_name: smollm2-135m-instruct\n  path: {tmp_path}/w/m.gguf\n")
    text = text.replace("  base_url: http://127.0.0.1:8080/v1",
                        f"  base_url: http://{USER}:{PASSWORD}@127.0.0.1:8080/v1")
    path.write_text(text)
    recorded = load_model_file(path).recorded()
    shown = json.dumps(recorded)
    assert str(tmp_path) not in shown and PASSWORD not in shown
    assert recorded["weights"]["path"] == "w/m.gguf"
    assert recorded["options"]["base_url"] == "http://[scrubbed]@127.0.0.1:8080/v1"


def test_secrets_follow_the_environment_between_calls(monkeypatch):
    """The secrets are worked out once per state of the environment: a variable set, changed or
    removed after a scrub, or a name registered later, counts from the next scrub on."""
    scrubber = Scrubber()
    assert scrubber.scrub_text("token tk-one-12345") == "token tk-one-12345"
    monkeypatch.setenv("LATER_TOKEN", "tk-one-12345")
    assert scrubber.scrub_text("token tk-one-12345") == f"token {PLACEHOLDER}"
    monkeypatch.setenv("LATER_TOKEN", "tk-two-67890")
    assert scrubber.scrub_text("tk-one-12345 tk-two-67890") == f"tk-one-12345 {PLACEHOLDER}"
    monkeypatch.delenv("LATER_TOKEN")
    assert scrubber.scrub_text("tk-two-67890") == "tk-two-67890"
    monkeypatch.setenv("PLAIN_NAMED_VAR", "value-1234567")
    assert scrubber.scrub_text("value-1234567") == "value-1234567"
    scrubber.add_env(["PLAIN_NAMED_VAR"])
    assert scrubber.scrub_text("value-1234567") == PLACEHOLDER
