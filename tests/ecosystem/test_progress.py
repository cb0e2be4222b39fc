"""Progress: the observer API, the plain-line renderer with its ETA, and the commands' output."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys

import pytest

from tests.followups.conftest import ROOT
from vcrime_audit.progress import RichObserver, Task, observing, plain_line, progress


class Recorder:
    def __init__(self):
        self.events = []

    def started(self, task):
        self.events.append(("start", task.name, task.total))

    def advanced(self, task, label):
        self.events.append(("step", task.name, task.done, label))

    def finished(self, task):
        self.events.append(("end", task.name, task.done))


def test_progress_reaches_the_installed_observer_and_nothing_without_one():
    with progress("quiet", 2) as tick:
        tick("a")  # no observer: nothing to see, nothing fails
    recorder = Recorder()
    with observing(recorder):
        with progress("verify", 3) as tick:
            tick("one")
            tick.total = 4
            tick("two")
    assert recorder.events == [("start", "verify", 3), ("step", "verify", 1, "one"),
                               ("step", "verify", 2, "two"), ("end", "verify", 2)]


def test_eta_is_remaining_steps_at_the_mean_pace():
    task = Task("x", 10, done=4, started_at=0.0)
    elapsed = task.elapsed()
    assert task.eta() == pytest.approx(6 * elapsed / 4, rel=1e-3)
    assert Task("x", None, done=3).eta() is None and Task("x", 5).eta() is None


def test_plain_observer_prints_one_line_per_step_with_eta():
    stream = io.StringIO()
    with observing(RichObserver(stream, force_plain=True)):
        with progress("rejudge", 2) as tick:
            tick("first")
            tick("second")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("rejudge 1/2  elapsed 0:00  eta 0:00  first")
    assert lines[1].startswith("rejudge 2/2") and lines[1].endswith("second")
    assert plain_line(Task("t", None, done=1), "") .startswith("t 1/?")


def test_run_prints_a_line_per_turn_when_replaying(tmp_path):
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    recorded = sorted((ROOT / "cassettes").glob("robotics_company__data_theft-*.jsonl.gz"))[0]
    shutil.copy(recorded, cassettes)
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "run", "--max-turns", "3",
                           "--record-mode", "none", "--db", str(tmp_path / "s.sqlite"),
                           "--cassette-dir", str(cassettes)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("turn ")]
    assert [line.split()[1] for line in lines] == ["1/3", "2/3", "3/3"]
    replayed = [int(line.split("calls ")[1].split(", ")[1].split()[0]) for line in lines]
    assert all(" 0 made" in line for line in lines) and replayed == sorted(replayed)
    assert f"0 to the model, {replayed[-1]} replayed" in done.stdout
    assert all(" -> " in line and "model " in line for line in lines)


def test_followup_replay_shows_progress_per_item(demo_store):
    rejudge = sorted((ROOT / "cassettes").glob("rejudge-*.jsonl.gz"))[0]
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "rejudge", "--db", str(demo_store),
                           "--replay", str(rejudge)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("rejudge ")]
    assert len(lines) == 3 and lines[-1].startswith("rejudge 3/3") and " eta " in lines[-1]


def test_certify_replay_shows_progress_per_conversation(tmp_path):
    cassette = sorted((ROOT / "cassettes").glob("certify-*.jsonl.gz"))[0]
    done = subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "certify", "--replay", str(cassette),
                           "--db", str(tmp_path / "c.sqlite")], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("certify ")]
    assert len(lines) == 50 and lines[-1].startswith("certify 50/50")
