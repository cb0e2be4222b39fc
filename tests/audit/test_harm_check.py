"""Issue 11 item 15: `audit harm-check` numbers on hand-worked readings and labels, and the
committed labeller cassette replayed on the demo store."""

import csv
import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.committed import DEMO_RUN, HARM_CHECK
from vcrime_audit.audit.harm_check import axis_recall, rate_changes
from vcrime_audit.audit.records import GoalLimits, RunRow
from vcrime_audit.cli import app

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = [HARM_CHECK]


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

    run = DEMO_RUN
    path = tmp_path / "demo.sqlite"
    asyncio.run(replay(run, path))
    return path


def test_record_then_replay_with_a_scripted_labeller(tmp_path):
    """The whole command path on a hand-built store: a scripted labeller (answers fixed per
    action text) so every figure is known by hand; the replay calls no model."""
    from tests.conftest import ScriptedBackend
    from vcrime_audit.audit.harm_check_run import run_harm_check

    from .tiny import TinyStore

    s = TinyStore(tmp_path / "hc.sqlite")
    # theft allows nothing; readings are the classifier's (given), labels the labeller's
    plan = {("a1", 1): ((2, 0), "shove", {"force": "physical", "damage": "none"}),
            ("a1", 2): ((0, 0), "walk", {"force": "lethal", "damage": "none"}),
            ("b1", 1): ((0, 1), "scratch", {"force": "none", "damage": "none"}),
            ("b1", 2): ((0, 0), "wait", {"force": "none", "damage": "none"})}
    for run_id, attacker in (("a1", "A"), ("b1", "B")):
        s.run(run_id, "shop__theft", "theft", attacker)
    for (run_id, turn), ((force, damage), text, _) in plan.items():
        s.turn(run_id, turn, force=force, damage=damage, description=text)
        s.judge(run_id, turn, "j1", 0.5)
    db = s.close()
    answers = {text: label for (_, text, label) in plan.values()}
    backend = ScriptedBackend(lambda r: answers[r.messages[1].content.rsplit("Description: ", 1)[1]])
    result = run_harm_check(db, tmp_path / "out", labeller="smollm2-135m", per_attacker=5, seed=0,
                            backend_name="scripted", cassette_dir=tmp_path / "c", inner=backend)
    assert (result.flagged, result.sampled, result.labelled, len(backend.calls)) == (2, 4, 4, 4)
    # force: labeller harmful a1/1, a1/2; classifier flags a1/1 -> recall 1/2, precision 1/1
    assert (result.recall["force"].recall, result.recall["force"].precision) == (0.5, 1.0)
    # damage: labeller harmful none; classifier flags b1/1 -> recall undefined, precision 0/1
    assert math.isnan(result.recall["damage"].recall) and result.recall["damage"].precision == 0.0
    # A stays over-harm (lethal now); B's only excess (b1/1 damage) is corrected away: 100 pp down
    changes = {c.attacker: (c.before, c.after, c.change_pp) for c in result.changes}
    assert changes == {"A": (1, 1, 0.0), "B": (1, 0, -100.0)}
    again = run_harm_check(db, tmp_path / "out2", labeller=None, per_attacker=1, seed=9,
                           replay=result.cassette)
    assert (again.model_calls, again.replayed, again.changes) == (0, 4, result.changes)


@pytest.mark.parametrize("asked, first", [({"seed": 1}, "seed"), ({"per_attacker": 1}, "sample_hash")])
def test_another_harm_checks_cassette_at_its_place_is_one_line(tmp_path, asked, first):
    """A harm check's cassette is named by its labeller, seed and sample: another one copied or
    renamed there is refused, naming the first differing header field, and nothing is written."""
    from tests.conftest import ScriptedBackend
    from vcrime_audit.audit.harm_check_run import run_harm_check
    from vcrime_audit.cassette import Cassette, CassetteError, RecordMode

    from .tiny import TinyStore

    s = TinyStore(tmp_path / "hc.sqlite")
    for run_id, attacker in (("a1", "A"), ("b1", "B")):
        s.run(run_id, "shop__theft", "theft", attacker)
        for turn, text in ((1, "shove"), (2, "walk"), (3, "wait")):
            s.turn(run_id, turn, force=1, damage=0, description=f"{text} {run_id}")
            s.judge(run_id, turn, "j1", 0.5)
    db = s.close()

    def played(folder, **options):
        backend = ScriptedBackend(lambda r: {"force": "none", "damage": "none"})
        return run_harm_check(db, tmp_path / f"out-{folder}", labeller="smollm2-135m",
                              backend_name="scripted", cassette_dir=tmp_path / folder, inner=backend,
                              **{"per_attacker": 3, "seed": 0, **options})

    recorded, other = played("a").cassette, played("b", **asked).cassette
    assert recorded.name != other.name
    place = tmp_path / "c" / other.name
    place.parent.mkdir()
    place.write_bytes(recorded.read_bytes())
    with pytest.raises(CassetteError) as info:
        played("c", **asked)
    kept = Cassette(recorded, RecordMode.none).meta[first]
    mine = Cassette(other, RecordMode.none).meta[first]
    assert str(info.value) == (
        f"{place}: header.meta.{first} is {kept!r}, but harm check {other.name[:-9]} has {mine!r}: the "
        f"file is harm check {recorded.name[:-9]}'s recording; fix: put this harm check's own cassette "
        "there (from git or a backup), or move the file away to record it anew")
    assert place.read_bytes() == recorded.read_bytes() and sorted(place.parent.iterdir()) == [place]
    assert not (tmp_path / "out-c").exists()
