"""A real headless Chromium (Debian's package, driven by Playwright) and `vcrime-audit` servers
started as the user starts them."""

from __future__ import annotations

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = os.environ.get("VCRIME_CHROMIUM", "/usr/bin/chromium")


class Server:
    """A `vcrime-audit` command that serves a page; ``url`` is the address it printed."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "vcrime_audit.cli", *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.wait_for("open")[len("open"):].strip()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)

    def wait_for(self, prefix: str, timeout: float = 60) -> str:
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(f"no '{prefix}' line in {timeout} s; output: "
                                     f"{''.join(self.output)}") from None
            if line.startswith(prefix):
                return line.strip()

    def stop(self) -> str:
        """Ctrl+C, as a person stops it; returns everything it printed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return "".join(self.output)


@pytest.fixture
def serve(tmp_path) -> Iterator:
    started: list[Server] = []

    def start(*args: str) -> Server:
        server = Server(list(args), tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("VCRIME_SKIP_BROWSER") == "1":
        pytest.skip("VCRIME_SKIP_BROWSER=1")
    if not shutil.which(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}; fix: apt-get install -y chromium (scripts/install.sh "
                    "does it as root) or set VCRIME_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def shots() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS
