"""Bad input to `play` and `rate`: one line naming the option and the fix, exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vcrime_audit.store import Store

from .conftest import ROOT


def _cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vcrime_audit.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize(("args", "expected"), [
    (["play", "--player", "a b"], "error: --player: player name 'a b'"),
    (["play", "--task", "no_such_task"], "no_such_task"),
    (["play", "--judge", "no-such-model"], "unknown model 'no-such-model'"),
    (["play", "--host", "203.0.113.9"], "error: --host 203.0.113.9: cannot listen there"),
    (["play", "--models-from", "missing.jsonl.gz"], "error: --models-from missing.jsonl.gz: no such"),
    (["play", "--max-turns", "0"], "error: --max-turns: 0 is not allowed; fix: give at least 1 turn"),
    (["play", "--stall-turns", "-5"], "error: --stall-turns: -5 is not allowed; fix: give at least 1 turn"),
    (["rate", "--db", "missing.sqlite"], "error: --db missing.sqlite: no such store"),
    (["rate", "--db", "empty.sqlite", "--rater", "x y"], "error: --rater 'x y'"),
    (["rate", "--db", "empty.sqlite", "--runs", "nope"], "error: --runs: not in empty.sqlite: nope"),
    (["rate", "--db", "empty.sqlite"], "the chosen runs have no key turn"),
])
def test_bad_input_gets_one_clear_line(tmp_path, args, expected):
    Store(tmp_path / "empty.sqlite")
    done = _cli(*args, "--db" if args[0] == "play" else "--sample", "x.sqlite" if args[0] == "play" else "5",
                cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
