"""The per-attacker cells of Table 1 before resampling: turn rates per judge (non-failure,
catastrophic failure) on every run; over-harm, lethal/catastrophic, team usage and Pass@1 on the
primary judge's runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from .estimates import Cell
from .overharm import RunHarm
from .records import AuditInput, RunRow, TurnRow
from .stats import RunValue

RateCells = dict[tuple[str, str], tuple[Cell, Cell]]
"""(judge, attacker) -> non-failure cell, catastrophic-failure cell."""

NO_JUDGMENTS = (0.0, 0.0, (), ())
"""The :data:`judgment_table.JudgmentSums` of a run its judge never scored."""


def add_judgment_sums(nf: Cell, cat: Cell, run: RunRow, sums: Sequence) -> None:
    """Add one run's :data:`judgment_table.JudgmentSums` to a non-failure and a catastrophic-failure cell."""
    non_failure, catastrophic, turns, risky_turns = sums
    nf.values.append(RunValue(run.task_id, non_failure, len(turns)))
    cat.values.append(RunValue(run.task_id, catastrophic, len(risky_turns)))
    if turns:
        nf.sources[run.run_id] = tuple(turns)
    if risky_turns:
        cat.sources[run.run_id] = tuple(risky_turns)


def turn_rate_cells(data: AuditInput, rows: np.ndarray | None = None) -> RateCells:
    """(judge, attacker) -> its non-failure and catastrophic-failure cells over the judgment rows
    selected by ``rows`` (every row of a finished run when None; in ``data.runs`` order). The
    cells over every row are read, never changed, by the metrics and by the judge audit
    (``AuditInput.turn_rate_cells`` builds them once)."""
    table = data.judgment_table
    finished = table.rows_of_runs({r.run_id for r in data.runs})
    sums = table.sums(finished if rows is None else finished & rows)
    cells = {(j, a): (Cell([], {}), Cell([], {})) for j in data.judges for a in data.attackers}
    for judge in data.judges:
        for run in data.runs:
            nf, cat = cells[judge, run.attacker]
            add_judgment_sums(nf, cat, run, sums.get((judge, run.run_id), NO_JUDGMENTS))
    return cells


def keyed_rate_cells(prefix: str, cells: RateCells) -> dict[str, Cell]:
    """``{prefix}_nf/judge/attacker`` and ``{prefix}_cat/judge/attacker``, judge by judge."""
    return {f"{prefix}_{metric}/{j}/{a}": pair[k] for (j, a), pair in cells.items()
            for k, metric in enumerate(("nf", "cat"))}


def build_cells(data: AuditInput, harm: Mapping[str, RunHarm],
                primary: str | None = None) -> dict[str, Cell]:
    """Every per-attacker cell, keyed 'metric/attacker' or 'metric/judge/attacker'.

    Turn-level cells use every run; run-level cells (over-harm, lethal/catastrophic, team usage,
    Pass@1) only the runs whose live judge is `primary` (all runs when None).
    """
    cells: dict[str, Cell] = {}
    runs_of: dict[str, list[RunRow]] = defaultdict(list)
    for run in data.runs:
        runs_of[run.attacker].append(run)
    rates = data.turn_rate_cells
    turns_of: dict[str, list[TurnRow]] = defaultdict(list)
    for t in data.turns:
        turns_of[t.run_id].append(t)
    for attacker, runs in runs_of.items():
        for judge in data.judges:
            nf, cat = rates[judge, attacker]
            cells[f"non_failure/{judge}/{attacker}"] = nf
            cells[f"catastrophic/{judge}/{attacker}"] = cat
        runs = [r for r in runs if primary is None or r.judge == primary]
        team = Cell([], {})
        for run in runs:
            rows = turns_of.get(run.run_id, [])
            team.values.append(RunValue(run.task_id, sum(not t.actor_is_leader for t in rows), len(rows)))
            if rows:
                team.sources[run.run_id] = tuple(t.turn for t in rows)
        cells[f"team_usage/{attacker}"] = team
        cells[f"over_harm/{attacker}"] = Cell(
            [RunValue(r.task_id, float(harm[r.run_id].over_harm)) for r in runs],
            {r.run_id: harm[r.run_id].excess_turns for r in runs})
        cells[f"extreme_harm/{attacker}"] = Cell(
            [RunValue(r.task_id, float(harm[r.run_id].extreme)) for r in runs],
            {r.run_id: harm[r.run_id].extreme_turns for r in runs})
        cells[f"pass_at_1/{attacker}"] = Cell(
            [RunValue(r.task_id, float(r.status == "won")) for r in runs], {r.run_id: () for r in runs})
    return cells
