"""Over-harm by task: the task x attacker table, and the paper's task-level breakdown by highest
excess level with the wins per task."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .overharm import RunHarm
from .records import RunRow

EXCESS_LEVELS = ("force", "damage", "lethal", "catastrophic")
"""Highest excess level of an over-harm run, lowest first (the paper's task-level breakdown)."""


@dataclass(frozen=True)
class TaskCell:
    """Over-harm runs of one attacker on one task."""

    over_harm: int
    runs: tuple[str, ...]

    @property
    def rate(self) -> float:
        return self.over_harm / len(self.runs) if self.runs else float("nan")


@dataclass(frozen=True)
class TaskBreakdown:
    """One task on the primary judge's runs: wins and over-harm runs by highest excess level."""

    runs: int
    wins: int
    over_harm: int
    levels: dict[str, int]
    wins_by_attacker: dict[str, int]


@dataclass(frozen=True)
class PairBreakdown:
    """Attacker-task pairs by their number of over-harm runs, and the highest excess level of the
    pairs with any (a pair's highest: the highest of its runs, in EXCESS_LEVELS order)."""

    pairs: int
    by_count: dict[int, int]
    highest: dict[str, int]
    both_axes_runs: int
    tasks_without_over_harm: int


def task_breakdown(runs: Sequence[RunRow], harm: Mapping[str, RunHarm],
                   attackers: Sequence[str]) -> tuple[dict[str, TaskBreakdown], PairBreakdown]:
    """Per task (wins, over-harm by highest excess level) and per attacker-task pair."""
    by_task: dict[str, list[RunRow]] = defaultdict(list)
    for run in runs:
        by_task[run.task_id].append(run)
    tasks = {}
    pair_runs: dict[tuple[str, str], list[RunHarm]] = defaultdict(list)
    for task, rows in sorted(by_task.items()):
        levels = {name: 0 for name in EXCESS_LEVELS}
        wins = {a: 0 for a in attackers if any(r.attacker == a for r in rows)}
        for run in rows:
            h = harm[run.run_id]
            pair_runs[(run.attacker, task)].append(h)
            if h.excess_level:
                levels[h.excess_level] += 1
            wins[run.attacker] += run.status == "won"
        tasks[task] = TaskBreakdown(len(rows), sum(wins.values()), sum(levels.values()), levels, wins)
    by_count: dict[int, int] = defaultdict(int)
    highest = {name: 0 for name in EXCESS_LEVELS}
    for rows in pair_runs.values():
        flagged = [EXCESS_LEVELS.index(h.excess_level) for h in rows if h.excess_level]
        by_count[len(flagged)] += 1
        if flagged:
            highest[EXCESS_LEVELS[max(flagged)]] += 1
    both = sum(h.force_over and h.damage_over for rows in pair_runs.values() for h in rows)
    clean = sum(t.over_harm == 0 for t in tasks.values())
    return tasks, PairBreakdown(len(pair_runs), dict(sorted(by_count.items())), highest, both, clean)


def task_attacker_table(harm: Mapping[str, RunHarm]) -> dict[str, dict[str, TaskCell]]:
    grouped: dict[str, dict[str, list[RunHarm]]] = defaultdict(lambda: defaultdict(list))
    for h in harm.values():
        grouped[h.task_id][h.attacker].append(h)
    return {task: {attacker: TaskCell(sum(h.over_harm for h in rows), tuple(h.run_id for h in rows))
                   for attacker, rows in sorted(by_attacker.items())}
            for task, by_attacker in sorted(grouped.items())}
