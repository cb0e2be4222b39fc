"""Judge audit: do judges rank attackers alike, and do they favour their own model or vendor?

Rank agreement (the paper's bases): non-failure on the turns every judge scored; catastrophic
failure on each judge's full set of judged turns (its risky ones). Self-preference uses the
common turns. "Same model" means the same name or the same weights fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from .cells import keyed_rate_cells, turn_rate_cells
from .estimates import Estimate, bootstrap_cells, nanmedian_rows
from .records import AuditInput, ModelInfo
from .stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    average_ranks,
    percentile_interval,
    spearman,
)

SAME_MODEL, SAME_VENDOR, CROSS_VENDOR, UNKNOWN_VENDOR = (
    "same model", "same vendor", "cross vendor", "unknown vendor")
RELATIONS = (SAME_MODEL, SAME_VENDOR, CROSS_VENDOR, UNKNOWN_VENDOR)


@dataclass(frozen=True)
class JudgePair:
    first: str
    second: str
    rho: float
    n_attackers: int


@dataclass(frozen=True)
class RankAgreement:
    """Per-judge attacker rates on the common turns, ranks (1 = highest) and pairwise Spearman."""

    metric: str
    rates: dict[str, dict[str, float]]
    ranks: dict[str, dict[str, float]]
    pairs: list[JudgePair]
    basis: str = ""
    prefix: str = ""


@dataclass(frozen=True)
class Bias:
    """Raw: a judge's non-failure rate on one attacker minus the median of the other judges (the
    paper's). Adjusted: raw minus that judge's mean raw bias on cross-vendor attackers (its
    general leniency); NaN when the judge has no cross-vendor attacker."""

    judge: str
    attacker: str
    relation: str
    estimate: Estimate
    adjusted: Estimate | None = None


@dataclass(frozen=True)
class JudgeSpread:
    """One judge's raw biases over the attackers: how many, mean, range, and its leniency."""

    judge: str
    n: int
    mean: float
    minimum: float
    maximum: float
    leniency: float


@dataclass(frozen=True)
class GroupBias:
    """Mean bias over the (judge, attacker) pairs of one relation, with its interval and range."""

    relation: str
    mean: Estimate
    minimum: float
    maximum: float
    n_pairs: int
    adjusted: Estimate | None = None
    adjusted_minimum: float = float("nan")
    adjusted_maximum: float = float("nan")


@dataclass(frozen=True)
class JudgeAudit:
    judges: tuple[str, ...]
    attackers: tuple[str, ...]
    common_turns: int
    agreement: dict[str, RankAgreement]
    biases: list[Bias]
    groups: dict[str, GroupBias]
    cells: dict[str, Estimate]
    seed: int
    n_resamples: int
    confidence: float
    note: str = ""
    spreads: dict[str, JudgeSpread] = field(default_factory=dict)


def relation(judge: str, attacker: str, models: Mapping[str, ModelInfo]) -> str:
    if judge == attacker:
        return SAME_MODEL
    fingerprints = {getattr(models.get(name), "fingerprint", "") for name in (judge, attacker)}
    if len(fingerprints) == 1 and "" not in fingerprints:
        return SAME_MODEL
    if judge not in models or attacker not in models:
        return UNKNOWN_VENDOR
    return SAME_VENDOR if models[judge].vendor == models[attacker].vendor else CROSS_VENDOR


def rank_agreement(metric: str, rates: dict[str, dict[str, float]], basis: str = "",
                   prefix: str = "") -> RankAgreement:
    """Pairwise Spearman between judges over the attackers both judges have a rate for."""
    ranks = {}
    for judge, by_attacker in rates.items():
        names = [a for a, v in by_attacker.items() if not np.isnan(v)]
        r = average_ranks([-by_attacker[a] for a in names]) if names else []
        ranks[judge] = dict(zip(names, (float(x) for x in r), strict=True))
    pairs = []
    for first, second in combinations(rates, 2):
        names = [a for a in rates[first]
                 if not np.isnan(rates[first][a]) and not np.isnan(rates[second].get(a, np.nan))]
        rho = (spearman([rates[first][a] for a in names], [rates[second][a] for a in names])
               if len(names) >= 2 else float("nan"))
        pairs.append(JudgePair(first, second, rho, len(names)))
    return RankAgreement(metric, rates, ranks, pairs, basis, prefix)


def _biases(data: AuditInput, estimates: Mapping[str, Estimate], replicates: Mapping[str, np.ndarray],
            confidence: float) -> tuple[list[Bias], dict[str, np.ndarray]]:
    made, reps = [], {}
    for judge in data.judges:
        others = [k for k in data.judges if k != judge]
        for attacker in data.attackers:
            own = f"common_nf/{judge}/{attacker}"
            parts = [f"common_nf/{k}/{attacker}" for k in others]
            point = estimates[own].estimate - nanmedian_rows(
                np.array([[estimates[p].estimate for p in parts]]))[0]
            key = f"self_preference/{judge}/{attacker}"
            reps[key] = replicates[own] - nanmedian_rows(np.column_stack([replicates[p] for p in parts]))
            made.append((judge, attacker, key, point, (own, *parts)))
    lows, highs = _intervals([reps[key] for *_, key, _, _ in made], confidence)
    biases = [Bias(judge, attacker, relation(judge, attacker, data.models),
                   Estimate(key, float(point), low, high, derived_from=parts))
              for (judge, attacker, key, point, parts), low, high in zip(made, lows, highs, strict=True)]
    return _adjusted(biases, reps, confidence), reps


def _intervals(columns: Sequence[np.ndarray], confidence: float) -> tuple[list[float], list[float]]:
    """The percentile interval of each replicate column (one call for all of them)."""
    if not columns:
        return [], []
    low, high = percentile_interval(np.column_stack(columns), confidence)
    return low.tolist(), high.tolist()


def _adjusted(biases: list[Bias], reps: dict[str, np.ndarray], confidence: float) -> list[Bias]:
    """Each bias minus its judge's mean cross-vendor bias (point and per resample)."""
    adjusted: dict[int, tuple[str, float, tuple[str, ...]]] = {}
    for i, b in enumerate(biases):
        cross = [x for x in biases if x.judge == b.judge and x.relation == CROSS_VENDOR
                 and not np.isnan(x.estimate.estimate)]
        if not cross:
            continue
        key = f"self_preference_adjusted/{b.judge}/{b.attacker}"
        leniency = float(np.mean([x.estimate.estimate for x in cross]))
        with np.errstate(invalid="ignore"):
            matrix = np.column_stack([reps[x.estimate.key] for x in cross])
            counts = (~np.isnan(matrix)).sum(axis=1)
            lenient_rep = np.where(counts > 0, np.nansum(matrix, axis=1) / np.maximum(counts, 1), np.nan)
        reps[key] = reps[b.estimate.key] - lenient_rep
        parts = (b.estimate.key, *(x.estimate.key for x in cross))
        adjusted[i] = (key, b.estimate.estimate - leniency, parts)
    lows, highs = _intervals([reps[key] for key, _, _ in adjusted.values()], confidence)
    bounds = dict(zip(adjusted, zip(lows, highs, strict=True), strict=True))
    out = []
    nan = float("nan")
    for i, b in enumerate(biases):
        if i not in adjusted:
            est = Estimate(f"self_preference_adjusted/{b.judge}/{b.attacker}", nan, nan, nan)
        else:
            key, point, parts = adjusted[i]
            est = Estimate(key, point, *bounds[i], derived_from=parts,
                           undefined=int(np.isnan(reps[key]).sum()))
        out.append(Bias(b.judge, b.attacker, b.relation, b.estimate, est))
    return out


def judge_spreads(biases: Sequence[Bias]) -> dict[str, JudgeSpread]:
    out = {}
    for judge in sorted({b.judge for b in biases}):
        values = [b.estimate.estimate for b in biases
                  if b.judge == judge and not np.isnan(b.estimate.estimate)]
        cross = [b.estimate.estimate for b in biases if b.judge == judge
                 and b.relation == CROSS_VENDOR and not np.isnan(b.estimate.estimate)]
        nan = float("nan")
        out[judge] = JudgeSpread(judge, len(values), float(np.mean(values)) if values else nan,
                                 min(values, default=nan), max(values, default=nan),
                                 float(np.mean(cross)) if cross else nan)
    return out


def _group(relation_name: str, members: list[Bias], reps: Mapping[str, np.ndarray],
           confidence: float) -> GroupBias:
    points = np.array([b.estimate.estimate for b in members])
    with np.errstate(invalid="ignore"):
        matrix = np.column_stack([reps[b.estimate.key] for b in members])
        counts = (~np.isnan(matrix)).sum(axis=1)
        mean_rep = np.where(counts > 0, np.nansum(matrix, axis=1) / np.maximum(counts, 1), np.nan)
    low, high = percentile_interval(mean_rep[:, None], confidence)
    finite = points[~np.isnan(points)]
    point = float(finite.mean()) if finite.size else float("nan")
    est = Estimate(f"self_preference/{relation_name}", point, float(low[0]), float(high[0]),
                   derived_from=tuple(b.estimate.key for b in members))
    adjusted = [b.adjusted for b in members if b.adjusted is not None]
    adj_points = np.array([a.estimate for a in adjusted]) if adjusted else np.array([])
    adj_finite = adj_points[~np.isnan(adj_points)]
    adj_est = None
    if adj_finite.size:
        with np.errstate(invalid="ignore"):
            matrix = np.column_stack([reps[a.key] for a in adjusted if a.key in reps])
            counts = (~np.isnan(matrix)).sum(axis=1)
            adj_rep = np.where(counts > 0, np.nansum(matrix, axis=1) / np.maximum(counts, 1), np.nan)
        a_low, a_high = percentile_interval(adj_rep[:, None], confidence)
        adj_est = Estimate(f"self_preference_adjusted/{relation_name}", float(adj_finite.mean()),
                           float(a_low[0]), float(a_high[0]),
                           derived_from=tuple(a.key for a in adjusted if a.key in reps))
    nan = float("nan")
    return GroupBias(relation_name, est, float(finite.min()) if finite.size else nan,
                     float(finite.max()) if finite.size else nan, len(members), adj_est,
                     float(adj_finite.min()) if adj_finite.size else nan,
                     float(adj_finite.max()) if adj_finite.size else nan)


def judge_audit(data: AuditInput, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                confidence: float = DEFAULT_CONFIDENCE) -> JudgeAudit:
    judges, attackers = data.judges, data.attackers
    common, n_common = data.judgment_table.common_rows(judges)
    empty = JudgeAudit(judges, attackers, n_common, {}, [], {}, {}, seed, n_resamples, confidence)
    if len(judges) < 2:
        return _with_note(empty, f"needs at least two judges; this store has {len(judges)} "
                                 f"({', '.join(judges) or 'none'})")
    if not n_common:
        return _with_note(empty, "no turn was scored by every judge; re-judge the same turns with "
                                 "each judge first")
    cells = {**keyed_rate_cells("common", turn_rate_cells(data, common)),
             **keyed_rate_cells("full", data.turn_rate_cells)}
    estimates, replicates = bootstrap_cells(cells, data.tasks, n_resamples=n_resamples, seed=seed,
                                            confidence=confidence)
    table = data.judgment_table
    counts = dict(zip(table.judges, np.bincount(table.judge).tolist(), strict=True))
    judged = {j: counts.get(j, 0) for j in judges}
    bases = {"non_failure": (f"the {n_common} attacker turns every judge scored", "common_nf"),
             "catastrophic": ("each judge's full set of judged turns (" + ", ".join(
                 f"{j}: {n}" for j, n in judged.items()) + "), its risky ones", "full_cat")}
    agreement = {
        metric: rank_agreement(metric, {j: {a: estimates[f"{prefix}/{j}/{a}"].estimate for a in attackers}
                                        for j in judges}, basis, prefix)
        for metric, (basis, prefix) in bases.items()}
    biases, reps = _biases(data, estimates, replicates, confidence)
    groups = {name: _group(name, members, reps, confidence)
              for name in RELATIONS if (members := [b for b in biases if b.relation == name])}
    note = "" if len(attackers) >= 2 else "rank agreement needs at least two attackers"
    return JudgeAudit(judges, attackers, n_common, agreement, biases, groups, estimates, seed,
                      n_resamples, confidence, note, judge_spreads(biases))


def _with_note(audit: JudgeAudit, note: str) -> JudgeAudit:
    return JudgeAudit(**{**audit.__dict__, "note": note})
