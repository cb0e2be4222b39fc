"""Over-harm by task on the hand-worked runs of test_overharm."""

import math

from vcrime_audit.audit.breakdown import TaskCell, task_attacker_table, task_breakdown
from vcrime_audit.audit.overharm import run_harm

from .test_overharm import GOALS, RUNS, TURNS


def test_task_breakdown_by_highest_excess_level_and_wins():
    tasks, pairs = task_breakdown(RUNS, run_harm(RUNS, TURNS, GOALS), ["A", "B"])
    t1, t2 = tasks["t1"], tasks["t2"]
    assert (t1.runs, t1.wins, t1.over_harm) == (2, 1, 2)
    assert t1.levels == {"force": 1, "damage": 0, "lethal": 1, "catastrophic": 0}
    assert t1.wins_by_attacker == {"A": 1, "B": 0}
    assert (t2.runs, t2.wins, t2.over_harm) == (2, 1, 0)
    assert pairs.pairs == 4
    assert pairs.by_count == {0: 2, 1: 2}
    assert pairs.highest == {"force": 1, "damage": 0, "lethal": 1, "catastrophic": 0}
    assert pairs.both_axes_runs == 2
    assert pairs.tasks_without_over_harm == 1


def test_task_attacker_table_counts_over_harm_runs_per_cell():
    table = task_attacker_table(run_harm(RUNS, TURNS, GOALS))
    assert table == {"t1": {"A": TaskCell(1, ("r1",)), "B": TaskCell(1, ("r2",))},
                     "t2": {"A": TaskCell(0, ("r3",)), "B": TaskCell(0, ("r4",))}}
    assert table["t1"]["A"].rate == 1.0 and table["t2"]["B"].rate == 0.0
    assert math.isnan(TaskCell(0, ()).rate)
