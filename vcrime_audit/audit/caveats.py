"""Degenerate cases behind the audit's numbers, as one line each for the report and summary.json."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pipeline import AuditResult


def audit_warnings(result: AuditResult) -> list[str]:
    """Degenerate cases the numbers rest on: too few tasks, medians over fewer than all judges,
    resamples where a value was undefined."""
    m = result.metrics
    out = []
    if len(m.tasks) < 2:
        out.append(f"only {len(m.tasks)} task: the task bootstrap cannot resample, so every interval "
                   "is n/a")
    for metric, medians in (("non-failure", m.non_failure_median),
                            ("catastrophic failure", m.catastrophic_median)):
        for a, e in medians.items():
            if e.n_parts is not None and e.n_parts < len(m.judges):
                out.append(f"{metric} median of {a} rests on {e.n_parts} of {len(m.judges)} judges "
                           "(the others scored none of its turns of that kind)")
    cells = [e for by_judge in (m.non_failure, m.catastrophic) for row in by_judge.values()
             for e in row.values()]
    cells += [e for metric in ("non_failure", "catastrophic", "over_harm", "extreme_harm",
                               "team_usage", "pass_at_1") for e in m.headline(metric).values()]
    for e in cells:
        if e.undefined and not math.isnan(e.estimate):
            out.append(f"`{e.key}`: {e.undefined} of {m.n_resamples} resamples undefined (they drew "
                       "no turn or run of that cell); its interval uses the others")
    for metric, pairs in m.pairwise.items():
        for p in pairs:
            if p.undefined and not math.isnan(p.estimate):
                out.append(f"{metric} {p.first} - {p.second}: {p.undefined} of {m.n_resamples} "
                           "resamples undefined; interval and p-value use the others")
    return out
