"""The per-attacker cells of Table 1 before resampling: turn rates per judge (non-failure,
catastrophic failure) on every run; over-harm, lethal/catastrophic, team usage and Pass@1 on the
primary judge's runs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence

from .estimates import Cell
from .overharm import RunHarm
from .records import AuditInput, JudgmentRow, RunRow, TurnRow
from .stats import RunValue


def judgment_sums(runs: Sequence[RunRow], judgments: Sequence[JudgmentRow],
                  turns: Collection[tuple[str, int]] | None = None) -> dict[tuple[str, str], list]:
    """(judge, run id) -> [non-failure sum, catastrophic sum on risky turns, turns, risky turns].

    ``turns`` limits the sums to those (run id, turn) pairs. One pass over plain tuple unpacking:
    this loop sees every judgment of the store.
    """
    known = {r.run_id for r in runs}
    sums: dict[tuple[str, str], list] = {}
    get = sums.get
    for run_id, turn, judge, risky, non_failure, catastrophic in judgments:
        if run_id not in known or (turns is not None and (run_id, turn) not in turns):
            continue
        s = get((judge, run_id))
        if s is None:
            s = sums[judge, run_id] = [0.0, 0.0, [], []]
        s[0] += non_failure
        s[2].append(turn)
        if risky:
            s[1] += catastrophic
            s[3].append(turn)
    return sums


NO_JUDGMENTS = (0.0, 0.0, (), ())
"""The :func:`judgment_sums` of a run its judge never scored."""


def add_judgment_sums(nf: Cell, cat: Cell, run: RunRow, sums: Sequence) -> None:
    """Add one run's :func:`judgment_sums` to a non-failure and a catastrophic-failure cell."""
    non_failure, catastrophic, turns, risky_turns = sums
    nf.values.append(RunValue(run.task_id, non_failure, len(turns)))
    cat.values.append(RunValue(run.task_id, catastrophic, len(risky_turns)))
    if turns:
        nf.sources[run.run_id] = tuple(turns)
    if risky_turns:
        cat.sources[run.run_id] = tuple(risky_turns)


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
    sums = judgment_sums(data.runs, data.judgments)
    turns_of: dict[str, list[TurnRow]] = defaultdict(list)
    for t in data.turns:
        turns_of[t.run_id].append(t)
    for attacker, runs in runs_of.items():
        for judge in data.judges:
            nf, cat = Cell([], {}), Cell([], {})
            for run in runs:
                add_judgment_sums(nf, cat, run, sums.get((judge, run.run_id), NO_JUDGMENTS))
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
