"""Human solvability and rating statistics against hand-worked and independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from vcrime_audit.audit.people import people_lines, rating_summary, read_people, solvability
from vcrime_audit.ratings import KeyTurn, save_rating
from vcrime_audit.store import Store


def _run(store: Store, run_id: str, task: str, attacker: str, status: str, started: str) -> None:
    store.start_run({"run_id": run_id, "task_id": task, "map_id": "m", "goal_id": "g", "seed": 0,
                     "attacker": attacker, "judge": "j", "world_manager": "w", "backend": "local",
                     "status": status, "reason": "", "turns": 1, "max_turns": 60, "stall_turns": 30,
                     "cassette": "", "initial_world_hash": "", "final_world_hash": "", "turn_rows_hash": "",
                     "synthetic": 0, "vcrime_version": "", "started_at": started, "finished_at": started})


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "p.sqlite")
    # task a: four players; only the fourth won, so it does not count (first three only)
    for i, (player, status) in enumerate([("p1", "lost"), ("p2", "stalled"), ("p3", "max_turns"),
                                          ("p4", "won")]):
        _run(s, f"a-{player}", "a", f"human:{player}", status, f"2026-01-01T00:00:0{i}")
    _run(s, "a-p1-again", "a", "human:p1", "running", "2026-01-01T00:01:00")  # unfinished: ignored
    # task b: the second player won on a second try
    _run(s, "b-p2", "b", "human:p2", "lost", "2026-01-01T00:00:00")
    _run(s, "b-p1", "b", "human:p1", "lost", "2026-01-01T00:00:01")
    _run(s, "b-p2-again", "b", "human:p2", "won", "2026-01-01T00:00:02")
    # models: 1 of 2 won on b; 0 of 1 on a; a task without human play is not listed
    _run(s, "b-m1", "b", "m", "won", "2026-01-01T00:00:03")
    _run(s, "b-m2", "b", "m", "lost", "2026-01-01T00:00:04")
    _run(s, "a-m1", "a", "m", "model_error", "2026-01-01T00:00:05")
    _run(s, "c-m1", "c", "m", "won", "2026-01-01T00:00:06")
    return s


def test_a_task_is_solvable_when_one_of_its_first_three_players_won(store):
    tasks = solvability(store)
    assert sorted(tasks) == ["a", "b"]
    assert tasks["a"].players == ["human:p1", "human:p2", "human:p3"] and not tasks["a"].solvable
    assert tasks["b"].players == ["human:p2", "human:p1"] and tasks["b"].winners == ["human:p2"]
    assert tasks["b"].pass_at_1 == {"m": (1, 2)} and tasks["a"].pass_at_1 == {"m": (0, 1)}
    section = "\n".join(people_lines(read_people(store)))
    assert "Solvable: **1 of 2** task(s)" in section
    assert "| b | p2, p1 | p2 | yes | 50% (1/2) |" in section


def _bootstrap_by_hand(tasks, scores, n_resamples, seed):
    """Resample tasks with replacement, mean of all scores of the drawn tasks, percentile interval."""
    names = sorted(set(tasks))
    sums = np.array([sum(s for t, s in zip(tasks, scores, strict=True) if t == n) for n in names])
    counts = np.array([sum(t == n for t in tasks) for n in names])
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_resamples, len(names)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def test_rating_means_intervals_and_weighted_kappa(store):
    turns = [("b-p2", 1), ("b-p1", 1), ("a-p1", 1), ("a-p2", 1), ("b-m1", 1), ("a-m1", 1)]
    ana = [(5, 4), (4, 4), (2, 1), (3, 3), (5, 5), (1, 2)]
    ben = [(4, 4), (4, 5), (1, 1), (3, 2), (5, 4), (2, 2)]
    for rater, scores in (("ana", ana), ("ben", ben)):
        for (run_id, turn), (judge, wm) in zip(turns, scores, strict=True):
            save_rating(store, rater, KeyTurn(run_id, turn, ("risky",)), judge, wm)
    save_rating(store, "cy", KeyTurn("c-m1", 1, ("risky",)), 3, 3)  # shares no turn with the others
    summary = rating_summary(store, n_resamples=2000, seed=7)
    task_of = {"b-p2": "b", "b-p1": "b", "a-p1": "a", "a-p2": "a", "b-m1": "b", "a-m1": "a", "c-m1": "c"}
    tasks = [task_of[r] for r, _ in turns] * 2 + ["c"]
    judge = [s[0] for s in ana + ben] + [3]
    assert summary.means["judge_score"].estimate == pytest.approx(np.mean(judge))
    low, high = _bootstrap_by_hand(tasks, judge, 2000, 7)
    assert summary.means["judge_score"].low == pytest.approx(low)
    assert summary.means["judge_score"].high == pytest.approx(high)
    assert set(summary.agreements) == {("ana", "ben", "judge_score"), ("ana", "ben", "world_manager_score")}
    for i, target in enumerate(("judge_score", "world_manager_score")):
        expected = cohen_kappa_score([s[i] for s in ana], [s[i] for s in ben], weights="quadratic")
        assert summary.agreements[("ana", "ben", target)].kappa == pytest.approx(expected)
    section = "\n".join(people_lines(read_people(store)))
    assert "### Human ratings of the Judge and the World Manager" in section
    assert "13 rating(s) of key turns by 3 rater(s)" in section


def test_a_store_without_people_has_no_section(tmp_path):
    assert people_lines(read_people(Store(tmp_path / "empty.sqlite"))) == []
