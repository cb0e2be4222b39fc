"""Per-attacker metrics of SPEC §2 with task-clustered bootstrap intervals.

Pure: an AuditInput in, numbers out. Every Estimate keeps the runs and turns it was computed
from (`sources`), so each number in a report can be traced back to store rows.

Populations (the paper's Table 1): over-harm, lethal/catastrophic, team usage and Pass@1 are
measured on the primary judge's runs (the runs whose live judge it is); non-failure and
catastrophic failure per judge pool every turn that judge scored (its live turns and its
re-judged turns), then the median across judges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .breakdown import PairBreakdown, TaskBreakdown, TaskCell, task_attacker_table, task_breakdown
from .cells import build_cells
from .estimates import Estimate, bootstrap_cells, median_estimate, pairwise, with_holm
from .overharm import RunHarm, run_harm
from .primary import PrimaryJudge, choose_primary_judge
from .records import AuditInput
from .stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, PairedDifference, spearman

PAIRWISE_METRICS = ("non_failure", "catastrophic", "over_harm", "team_usage", "pass_at_1")


@dataclass(frozen=True)
class AttackerMetrics:
    attackers: tuple[str, ...]
    judges: tuple[str, ...]
    tasks: tuple[str, ...]
    seed: int
    n_resamples: int
    confidence: float
    non_failure: dict[str, dict[str, Estimate]]
    """judge -> attacker -> turn non-failure rate."""
    catastrophic: dict[str, dict[str, Estimate]]
    """judge -> attacker -> catastrophic-failure probability on that judge's risky turns."""
    non_failure_median: dict[str, Estimate]
    catastrophic_median: dict[str, Estimate]
    over_harm: dict[str, Estimate]
    extreme_harm: dict[str, Estimate]
    team_usage: dict[str, Estimate]
    pass_at_1: dict[str, Estimate]
    pairwise: dict[str, list[PairedDifference]]
    harm_runs: dict[str, RunHarm]
    task_attacker: dict[str, dict[str, TaskCell]]
    n_runs: dict[str, int]
    n_turns: dict[str, int]
    harm_vs_success: float
    """Spearman rho across attackers between median non-failure and over-harm (Figure 3c)."""
    primary: PrimaryJudge = PrimaryJudge("", 0, 0, "")
    task_breakdown: dict[str, TaskBreakdown] = field(default_factory=dict)
    pair_breakdown: PairBreakdown | None = None
    over_harm_runs: dict[str, int] = field(default_factory=dict)
    """Attacker -> over-harm runs (the denominator of the lethal/catastrophic subset)."""
    n_tests: int = 0
    """Pairwise tests in the Holm family (defined p-values across every metric)."""

    def headline(self, metric: str) -> dict[str, Estimate]:
        """The per-attacker column of Table 1 for a metric in PAIRWISE_METRICS (+ extreme_harm)."""
        return {"non_failure": self.non_failure_median, "catastrophic": self.catastrophic_median,
                "over_harm": self.over_harm, "extreme_harm": self.extreme_harm,
                "team_usage": self.team_usage, "pass_at_1": self.pass_at_1}[metric]


def attacker_metrics(data: AuditInput, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                     confidence: float = DEFAULT_CONFIDENCE,
                     primary_judge: str | None = None) -> AttackerMetrics:
    """Table 1: per attacker, per judge and the median across judges, with intervals and pairs."""
    attackers, judges, tasks = data.attackers, data.judges, data.tasks
    primary = choose_primary_judge(data.runs, primary_judge)
    main_runs = [r for r in data.runs if r.judge == primary.name]
    harm = run_harm(data.runs, data.turns, data.goals)
    estimates, replicates = bootstrap_cells(build_cells(data, harm, primary.name), tasks,
                                            n_resamples=n_resamples, seed=seed, confidence=confidence)
    medians: dict[str, dict[str, Estimate]] = {"non_failure": {}, "catastrophic": {}}
    for metric, by_attacker in medians.items():
        for a in attackers:
            key = f"{metric}/median/{a}"
            parts = [f"{metric}/{j}/{a}" for j in judges]
            if parts:
                by_attacker[a], replicates[key] = median_estimate(key, parts, estimates, replicates,
                                                                   confidence)
            else:
                by_attacker[a] = Estimate(key, float("nan"), float("nan"), float("nan"))
                replicates[key] = np.full(n_resamples, np.nan)
            estimates[key] = by_attacker[a]
    pairs = {}
    for metric in PAIRWISE_METRICS:
        keys = [f"{metric}/median/{a}" if metric in medians else f"{metric}/{a}" for a in attackers]
        pairs[metric] = pairwise(attackers, [estimates[k].estimate for k in keys],
                                 [replicates[k] for k in keys], confidence)
    pairs, n_tests = with_holm(pairs)
    breakdown, pair_counts = task_breakdown(main_runs, harm, attackers)
    per_judge = {metric: {j: {a: estimates[f"{metric}/{j}/{a}"] for a in attackers} for j in judges}
                 for metric in medians}
    n_runs = {a: 0 for a in attackers}
    over_runs = {a: 0 for a in attackers}
    for run in main_runs:
        n_runs[run.attacker] += 1
        over_runs[run.attacker] += harm[run.run_id].over_harm
    attacker_of = {r.run_id: r.attacker for r in main_runs}
    n_turns = {a: 0 for a in attackers}
    for t in data.turns:
        if t.run_id in attacker_of:
            n_turns[attacker_of[t.run_id]] += 1
    return AttackerMetrics(
        attackers=attackers, judges=judges, tasks=tasks, seed=seed, n_resamples=n_resamples,
        confidence=confidence, non_failure=per_judge["non_failure"],
        catastrophic=per_judge["catastrophic"], non_failure_median=medians["non_failure"],
        catastrophic_median=medians["catastrophic"],
        **{m: {a: estimates[f"{m}/{a}"] for a in attackers}
           for m in ("over_harm", "extreme_harm", "team_usage", "pass_at_1")},
        pairwise=pairs, harm_runs=harm,
        task_attacker=task_attacker_table({r.run_id: harm[r.run_id] for r in main_runs}),
        n_runs=n_runs, n_turns=n_turns, harm_vs_success=harm_vs_success(
            [medians["non_failure"][a].estimate for a in attackers],
            [estimates[f"over_harm/{a}"].estimate for a in attackers]),
        primary=primary, task_breakdown=breakdown, pair_breakdown=pair_counts,
        over_harm_runs=over_runs, n_tests=n_tests)


def harm_vs_success(non_failure: Sequence[float], over_harm: Sequence[float]) -> float:
    """Spearman rho over the attackers with both numbers; NaN with fewer than two."""
    pairs = [(x, y) for x, y in zip(non_failure, over_harm, strict=True) if not (np.isnan(x) or np.isnan(y))]
    if len(pairs) < 2:
        return float("nan")
    return spearman([x for x, _ in pairs], [y for _, y in pairs])
