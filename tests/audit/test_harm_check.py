"""Issue 11 item 15: `audit harm-check` numbers on hand-worked readings and labels, and the
committed labeller cassette replayed on the demo store."""

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vcrime_audit.audit.harm_check import axis_recall, rate_changes
from vcrime_audit.audit.records import GoalLimits, RunRow
from vcrime_audit.cli import app

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = sorted((ROOT / "cassettes").glob("harmcheck-*.jsonl.gz"))


def test_recall_and_precision_by_hand():
    readings = {("r1", 1): (2, 0), ("r1", 2): (0, 0), ("r2", 1): (0, 1), ("r2", 2): (3, 2)}
    labels = {("r1", 1): (1, 0), ("r1", 2): (2, 1), ("r2", 1): (0, 0), ("r2", 2): (0, 2)}
    r = axis_recall(readings, labels)
    # force: labeller harmful r1/1, r1/2; classifier flags r1/1 (and r2/2, which it does not)
    assert (r["force"].labeller_harmful, r["force"].both, r["force"].classifier_flagged) == (2, 1, 2)
    assert r["force"].recall == 0.5 and r["force"].precision == 0.5
    # damage: labeller harmful r1/2, r2/2; classifier flags r2/1, r2/2
    assert (r["damage"].recall, r["damage"].precision) == (0.5, 0.5)


def test_over_harm_rates_after_correcting_disagreements_by_hand():
    runs = [RunRow("r1", "t", "theft", "A", "j", "won", False),
            RunRow("r2", "t", "theft", "A", "j", "won", False),
            RunRow("r3", "t", "robbery", "B", "j", "won", False)]
    goals = {"theft": GoalLimits(0, 0), "robbery": GoalLimits(1, 1)}
    readings = {("r1", 1): (2, 0), ("r2", 1): (0, 0), ("r3", 1): (1, 1), ("r3", 2): (0, 0)}
    labels = {("r1", 1): (0, 0), ("r2", 1): (0, 1), ("r3", 2): (4, 0)}
    changes = {c.attacker: c for c in rate_changes(runs, readings, labels, goals)}
    # A: r1 over -> not; r2 not -> over: 1/2 before and after. B: r3 within -> lethal: 0/1 -> 1/1
    assert (changes["A"].before, changes["A"].after, changes["A"].change_pp) == (1, 1, 0.0)
    assert (changes["B"].before, changes["B"].after, changes["B"].change_pp) == (0, 1, 100.0)


def test_a_labeller_is_required(tmp_path, demo_store_path):
    done = CliRunner().invoke(app, ["audit", "harm-check", "--db", str(demo_store_path),
                                    "--out", str(tmp_path / "hc"), "--cassette-dir", str(tmp_path)])
    assert done.exit_code == 2 and "--labeller: name a model from the registry" in done.output


def test_the_committed_labeller_cassette_replays_on_the_demo_store(tmp_path, demo_store_path):
    assert len(COMMITTED) == 1, "commit exactly one cassettes/harmcheck-*.jsonl.gz"
    done = CliRunner().invoke(app, ["audit", "harm-check", "--db", str(demo_store_path), "--out",
                                    str(tmp_path / "hc"), "--replay", str(COMMITTED[0]),
                                    "--per-attacker", "3"])
    assert done.exit_code == 0, done.output
    assert "calls 0 to a model" in done.output
    summary = json.loads((tmp_path / "hc" / "harm_check.json").read_text())
    with (tmp_path / "hc" / "labelled_sample.csv").open() as fh:
        sample = list(csv.DictReader(fh))
    assert summary["sampled"] == len(sample) == 3
    assert summary["labelled"] + summary["no_usable_answer"] == 3
    with (tmp_path / "hc" / "flagged_turns.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == summary["flagged_turns"]


@pytest.fixture
def demo_store_path(tmp_path):
    import asyncio

    from vcrime_audit.runner import replay

    run = sorted((ROOT / "cassettes").glob("robotics_company__data_theft-*.jsonl.gz"))[0]
    path = tmp_path / "demo.sqlite"
    asyncio.run(replay(run, path))
    return path
