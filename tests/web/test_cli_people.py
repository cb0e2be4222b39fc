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


def test_a_store_damaged_under_the_rate_page_gets_a_page_naming_it(serve, tmp_path):
    """The turn's patches on zeroed pages: a 503 page with the line naming the store and the fix
    (a bare 500 and a traceback before), the same line in the server's output."""
    import asyncio
    import html
    import urllib.error
    import urllib.request

    from tests.committed import HUMAN_DEMO
    from tests.damage import zero_table_pages
    from vcrime_audit.runner import replay

    db = tmp_path / "s.sqlite"
    asyncio.run(replay(HUMAN_DEMO, db))  # a person's game, with one key turn
    zero_table_pages(db, "patches")
    server = serve("rate", "--db", str(db), "--rater", "ana")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(server.url, timeout=30)
    line = (f"{db}: cannot be read or written (database disk image is malformed); fix: check it with "
            "`vcrime-audit verify`, restore it from a copy, or replay its cassettes into a new store")
    assert refused.value.code == 503
    assert html.unescape(refused.value.read().decode()).endswith(f"<p id=store-error>{line}</p>")
    assert server.wait_for("error") == f"error     {line}"
    assert "Traceback" not in server.stop()
