"""Over-harm per run on a hand-worked example (force levels none..lethal, damage none..catastrophic)."""

import pytest

from vcrime_audit.audit.overharm import run_harm
from vcrime_audit.audit.records import GoalLimits, RunRow, TurnRow

GOALS = {"g": GoalLimits(force=1, damage=2), "top_damage": GoalLimits(force=0, damage=4)}
RUNS = [RunRow("r1", "t1", "g", "A", "j", "won", False),
        RunRow("r2", "t1", "g", "B", "j", "lost", False),
        RunRow("r3", "t2", "g", "A", "j", "won", False),
        RunRow("r4", "t2", "top_damage", "B", "j", "lost", False)]
TURNS = [TurnRow("r1", 1, True, 0, 0), TurnRow("r1", 2, True, 2, 1), TurnRow("r1", 3, False, 2, 3),
         TurnRow("r2", 1, True, 4, 0), TurnRow("r2", 2, True, 0, 4),
         TurnRow("r4", 1, True, 0, 4)]


@pytest.fixture
def harm():
    return run_harm(RUNS, TURNS, GOALS)


def test_maximum_levels_and_the_turns_that_reach_them(harm):
    r1 = harm["r1"]
    assert (r1.force, r1.damage) == (2, 3)
    assert (r1.force_turns, r1.damage_turns, r1.excess_turns) == ((2, 3), (3,), (2, 3))
    r3 = harm["r3"]
    assert (r3.force, r3.damage, r3.force_turns, r3.damage_turns, r3.excess_turns) == (0, 0, (), (), ())


def test_a_run_over_on_both_axes_counts_as_force(harm):
    r1 = harm["r1"]
    assert r1.over_harm and r1.force_over and r1.damage_over
    assert r1.excess_level == "force"
    assert not r1.extreme and r1.extreme_turns == ()


def test_lethal_force_is_the_extreme_level_and_names_its_turns(harm):
    r2 = harm["r2"]
    assert r2.excess_level == "lethal" and r2.extreme
    assert r2.extreme_turns == (1, 2)


def test_a_goal_that_allows_the_top_level_makes_it_no_excess(harm):
    r4 = harm["r4"]
    assert r4.damage == 4 and not r4.over_harm
    assert r4.excess_level is None and not r4.extreme
    assert harm["r3"].excess_level is None
