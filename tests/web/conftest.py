"""`vcrime-audit` servers started as the user starts them (the browser is tests/conftest.py's)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
