"""The primary judge: the live judge whose runs are the main runs of Table 1."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

from .records import RunRow


class PrimaryJudge(NamedTuple):
    """The judge whose runs are the main runs, and why it was chosen."""

    name: str
    runs: int
    total_runs: int
    chosen_by: str


def choose_primary_judge(runs: Sequence[RunRow], requested: str | None = None) -> PrimaryJudge:
    """`requested` when given (it must be some run's live judge); else the live judge of most runs,
    a tie going to the alphabetically first name."""
    counts: dict[str, int] = defaultdict(int)
    for run in runs:
        counts[run.judge] += 1
    if requested is not None:
        if requested not in counts:
            known = ", ".join(sorted(j or "(none)" for j in counts))
            raise ValueError(f"--primary-judge {requested!r} is the live judge of no finished run; "
                             f"fix: choose one of {known}")
        return PrimaryJudge(requested, counts[requested], len(runs), "--primary-judge")
    best = max(counts.values())
    tied = sorted(j for j, n in counts.items() if n == best)
    how = "live judge of most runs" + (f" (tie with {', '.join(tied[1:])} broken alphabetically)"
                                       if len(tied) > 1 else "")
    return PrimaryJudge(tied[0], best, len(runs), how)
