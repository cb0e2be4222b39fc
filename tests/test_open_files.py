"""Every command closes the files it opened, whether it succeeds or fails.

A command that leaves a store open relies on the cycle collector to close it, and the collector
is off while runs play (:mod:`vcrime_audit.collector`): a library caller, the web server or a
study driver would then hold each store open, with its -wal and -shm, until the process ends, and
a file system holding them can be neither remounted read-only nor unmounted. The commands run
here in this process with the collector off, so a store left open stays open and is seen.
"""

from __future__ import annotations

import gc
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tests.committed import CASSETTES, CERTIFY, DEMO_RUN, FOLLOWUPS, HARM_CHECK, ROOT, STUDY_DEMO_RUNS
from tests.conftest import DEMO_TASK, open_under
from vcrime_audit.cli import app

RUN_ID = DEMO_RUN.name[:-len(".jsonl.gz")]


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def invoke(args: list[str]) -> tuple[int, str]:
    done = CliRunner().invoke(app, args)
    assert done.exception is None or isinstance(done.exception, SystemExit), (args, done.output)
    return done.exit_code, done.output


def commands(db: Path, tmp: Path) -> list[list[str]]:
    """Every command that reads or writes a store, on the demo store ``db``."""
    return [
        ["replay", str(DEMO_RUN), "--db", str(db)],
        ["rejudge", "--db", str(db), "--replay", str(FOLLOWUPS["rejudge"])],
        ["annotate", "--db", str(db), "--replay", str(FOLLOWUPS["annotate"])],
        ["interrogate", "--db", str(db), "--replay", str(FOLLOWUPS["interrogate"])],
        ["certify", "--db", str(db), "--replay", str(CERTIFY)],
        ["runs", "--db", str(db)],
        ["show", RUN_ID, "--db", str(db)],
        ["audit", "--db", str(db), "--out", str(tmp / "report"), "--resamples", "50"],
        ["audit", "judges", "--db", str(db)],
        ["audit", "harm-check", "--db", str(db), "--out", str(tmp / "harm"), "--replay", str(HARM_CHECK),
         "--per-attacker", "3"],
        ["export", "inspect", "--db", str(db), "--out", str(tmp / "inspect")],
        ["verify", "--db", str(db), str(CASSETTES)],
        ["verify", "--db", str(db), "--repair", str(CASSETTES)],
        ["merge", str(tmp / "merged.sqlite"), str(db)],
    ]


def test_every_command_closes_its_store(tmp_path, collector_off):
    db = tmp_path / "demo.sqlite"
    for args in commands(db, tmp_path):
        code, out = invoke(args)
        assert code == 0, (args, out)
        assert open_under(tmp_path) == [], args


def test_a_study_closes_its_store(tmp_path, collector_off):
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    for path in STUDY_DEMO_RUNS:
        shutil.copyfile(path, cassettes / path.name)
    code, out = invoke(["study", str(ROOT / "studies" / "demo.yaml"), "--replay", "--db",
                        str(tmp_path / "study.sqlite"), "--cassette-dir", str(cassettes)])
    assert code == 0, out
    assert open_under(tmp_path) == []


def test_recording_commands_close_their_store_and_cassettes(tmp_path, registry, collector_off):
    """A run and a re-judging recorded with the scripted backend (no model), then replayed."""
    db, cassettes = tmp_path / "rec.sqlite", tmp_path / "cassettes"
    scripted = ["--backend", "scripted", "--cassette-dir", str(cassettes)]
    steps = [["run", "--task", DEMO_TASK, "--attacker", "scripted-attacker", "--judge", "scripted-judge",
              "--world-manager", "scripted-wm", "--max-turns", "3", "--db", str(db), *scripted],
             ["rejudge", "--db", str(db), "--judge", "scripted-wm", *scripted]]
    for args in steps:
        code, out = invoke(args)
        assert code == 0, (args, out)
        assert open_under(tmp_path) == [], args
    recorded_files = sorted(cassettes.iterdir())
    assert [p.name.split("-")[0] for p in recorded_files] == ["rejudge", DEMO_TASK], recorded_files
    for recorded in recorded_files:
        command = ["replay", str(recorded)] if recorded.name.startswith(DEMO_TASK) else \
            ["rejudge", "--replay", str(recorded)]
        code, out = invoke([*command, "--db", str(db)])
        assert code == 0, (command, out)
        assert open_under(tmp_path) == [], command


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory) -> Path:
    """The demo run, its follow-ups and the certificate in one store."""
    db = tmp_path_factory.mktemp("demo") / "demo.sqlite"
    for args in commands(db, db.parent)[:5]:
        assert invoke(args)[0] == 0, args
    return db


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_command_that_fails_on_a_broken_store_closes_it(demo_store, tmp_path_factory, data):
    """Bytes of the store overwritten at random (a page header, a row, the schema) or cut short:
    whatever each command makes of it, a line or a result, it holds no file open afterwards."""
    tmp = tmp_path_factory.mktemp("broken")
    db = tmp / "demo.sqlite"
    broken = bytearray(demo_store.read_bytes())
    if data.draw(st.booleans(), label="cut short"):
        broken = broken[:data.draw(st.integers(0, len(broken) - 1), label="length")]
    for _ in range(data.draw(st.integers(1, 8), label="edits")):
        if not broken:
            break
        at = data.draw(st.integers(0, len(broken) - 1), label="at")
        size = data.draw(st.integers(1, 64), label="size")
        broken[at:at + size] = data.draw(st.binary(min_size=size, max_size=size), label="bytes")
    cassettes = tmp / "cassettes"
    study = ["study", str(ROOT / "studies" / "demo.yaml"), "--replay", "--db", str(db), "--cassette-dir",
             str(cassettes)]
    args = data.draw(st.sampled_from([*commands(db, tmp), study]), label="command")
    if args == study:
        cassettes.mkdir()
        for path in STUDY_DEMO_RUNS:
            shutil.copyfile(path, cassettes / path.name)
    db.write_bytes(bytes(broken))
    gc.disable()
    try:
        code, out = invoke(args)
        assert code in (0, 1, 2), (args, out)
        assert open_under(tmp) == [], (args, out)
    finally:
        gc.enable()
        gc.collect()
