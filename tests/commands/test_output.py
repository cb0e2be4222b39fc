"""What commands print: reuse of a recording said in one line, `next` commands that can be
copied, unwrapped piped output, tables with headers, a transcript legend, help that reads right."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from typer.testing import CliRunner

from tests.committed import CERTIFY, DEMO_RUN
from tests.readme import ROOT
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cli import app

RUN_ID = "robotics_company__data_theft-s0-e3005c10"


def _invoke(*args: str):
    done = CliRunner().invoke(app, list(args))
    assert done.exit_code == 0, done.output
    return done.output


def test_a_run_already_recorded_is_replayed_and_says_so_with_how_to_record_afresh(tmp_path):
    shutil.copy(DEMO_RUN, tmp_path)
    out = _invoke("run", "--max-turns", "3", "--cassette-dir", str(tmp_path),
                  "--db", str(tmp_path / "s.sqlite"))
    calls = len(Cassette(DEMO_RUN, RecordMode.none).calls)
    assert f"calls     0 to the model, {calls} replayed" in out
    [reused] = [line for line in out.splitlines() if line.startswith("reused")]
    assert "no model was called" in reused
    assert reused.endswith(f"vcrime-audit run --max-turns 3 --db {tmp_path / 's.sqlite'} "
                           f"--cassette-dir {tmp_path} --record-mode all")
    assert f"next      vcrime-audit show {RUN_ID} --db {tmp_path / 's.sqlite'}" in out
    assert f"next      vcrime-audit replay {tmp_path / DEMO_RUN.name}" in out


def test_piped_output_is_not_wrapped_so_commands_stay_on_one_line(tmp_path):
    store = tmp_path / ("a-rather-long-folder-name-" * 3) / "store.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "vcrime_audit.cli", "replay", str(DEMO_RUN), "--db", str(store)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"next      vcrime-audit show {RUN_ID} --db {store}\n" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) > 80


def test_runs_and_show_print_a_header_and_a_legend(tmp_path):
    store = str(tmp_path / "s.sqlite")
    _invoke("replay", str(DEMO_RUN), "--db", store)
    lines = _invoke("runs", "--db", store).splitlines()
    assert lines[0].split() == ["run", "status", "turns", "attacker", "judge", "why", "it", "ended"]
    assert lines[2].split()[:3] == [RUN_ID, "max_turns", "3"]
    shown = _invoke("show", RUN_ID, "--db", store)
    assert "legend:" in shown and "+ applied, x (why) rejected" in shown
    assert " + " in shown and " x (" in shown  # the marks the legend explains


def test_certify_replay_honours_db_even_when_it_is_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = _invoke("certify", "--replay", str(CERTIFY), "--db", "runs/vcrime.sqlite")
    assert "store          runs/vcrime.sqlite" in out and (tmp_path / "runs" / "vcrime.sqlite").is_file()
    assert f"next      vcrime-audit certify --replay {CERTIFY}" in out and "reused" not in out


def test_help_shows_flags_as_flags_arguments_in_capitals_and_what_is_required():
    study = _invoke("study", "--help")
    assert "--replay" in study and "<bool>" not in study and "BOOLEAN" not in study
    assert "study [OPTIONS] CONFIG" in study and "{" not in study
    assert "REPLAY [OPTIONS] CASSETTE" in _invoke("replay", "--help").upper()
    rejudge = " ".join(_invoke("rejudge", "--help").replace("│", " ").split())
    assert "required unless --replay" in rejudge


def test_a_study_whose_runs_are_recorded_replays_them_and_says_so(tmp_path):
    from tests.committed import STUDY_DEMO_RUNS

    for path in STUDY_DEMO_RUNS:
        shutil.copy(path, tmp_path)
    store = tmp_path / "s.sqlite"
    out = _invoke("study", str(ROOT / "studies" / "demo.yaml"), "--cassette-dir", str(tmp_path),
                  "--db", str(store))
    n = len(STUDY_DEMO_RUNS)
    assert f"{n} run(s) played, 0 already finished" in out
    [reused] = [line for line in out.splitlines() if line.startswith("reused")]
    assert f"{n} run(s) replayed from cassettes already in {tmp_path} (no model called)" in reused
    assert f"next      vcrime-audit runs --db {store}" in out
