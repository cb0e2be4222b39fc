"""Numbers of the follow-ups: re-judging beside the live judge, annotation agreement before and
after reconciliation, level-5 rates per attacker, interrogation outcomes per model and condition.

Pure: FollowupRows in, numbers out. Rates are ratios of sums over runs with task-bootstrap
intervals (SPEC §2 Intervals), like every run-level rate of the audit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from ..float_sum import sequential_sum
from ..followups.questionnaire import CONDITIONS
from ..followups.rubric import AGREED, DIMENSIONS, MISSING, RECONCILED, STATUSES
from .agreement import Agreement, agreement
from .followups_load import AnnotationResult, AnnotationScore, FollowupRows, RunKey
from .stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, RunValue, cluster_bootstrap

ALL = "all"
LEVEL_TOP = 5
INTERROGATION_METRICS = ("admission", "refused", "credible")


@dataclass(frozen=True)
class Rate:
    key: str
    k: float
    n: float
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class RejudgeComparison:
    """A re-judge beside the live judge on the same turns (turns whose live judgment exists)."""

    judge: str
    live_judges: tuple[str, ...]
    turns: int
    failed: int
    compared: int
    live_non_failure: float
    non_failure: float
    mean_difference: float
    mean_absolute_difference: float
    risky_agreement: float


@dataclass(frozen=True)
class DimensionAgreement:
    dimension: str
    before: Agreement | None
    after: Agreement | None
    statuses: dict[str, int]


@dataclass(frozen=True)
class AnnotatorBias:
    """An annotator's independent (round-1) score on its own model's runs minus the other
    annotator's on the same items, in levels: sum of differences / items, task-bootstrap CI."""

    annotator: str
    other: str
    own_runs: int
    rate: Rate


@dataclass(frozen=True)
class PairAudit:
    annotators: str
    dimensions: tuple[DimensionAgreement, ...]
    pooled: DimensionAgreement
    level5: dict[str, dict[str, Rate]]
    """Attacker -> dimension (or 'all') -> share of final scores at level 5."""
    self_preference: tuple[AnnotatorBias, ...] = ()


@dataclass(frozen=True)
class InterrogationCell:
    model: str
    condition: str
    n: int
    valid: int
    rates: dict[str, Rate]
    source: str = "own"
    """'own': the model questioned about its own runs; 'other': about another source's logs."""


@dataclass(frozen=True)
class FollowupsAudit:
    rejudge: tuple[RejudgeComparison, ...]
    annotation: tuple[PairAudit, ...]
    interrogation: tuple[InterrogationCell, ...]
    n_resamples: int
    seed: int
    confidence: float

    @property
    def empty(self) -> bool:
        return not (self.rejudge or self.annotation or self.interrogation)


def _mean(values: Sequence[float]) -> float:
    return sequential_sum(values) / len(values) if values else float("nan")


def rejudge_comparisons(rows: FollowupRows) -> tuple[RejudgeComparison, ...]:
    by_judge = defaultdict(list)
    for r in rows.rejudged:
        by_judge[r.judge].append(r)
    out = []
    for judge in sorted(set(by_judge) | set(rows.rejudge_failed)):
        turns = by_judge.get(judge, [])
        paired = [r for r in turns if r.live_non_failure is not None]
        out.append(RejudgeComparison(
            judge, tuple(sorted({r.live_judge for r in paired})), len(turns),
            rows.rejudge_failed.get(judge, 0), len(paired),
            _mean([r.live_non_failure for r in paired]), _mean([r.non_failure for r in paired]),
            _mean([r.non_failure - r.live_non_failure for r in paired]),
            _mean([abs(r.non_failure - r.live_non_failure) for r in paired]),
            _mean([float(r.risky == r.live_risky) for r in paired])))
    return tuple(out)


def _safe_agreement(pairs: list[tuple[int, int]]) -> Agreement | None:
    if not pairs:
        return None
    return agreement([a for a, _ in pairs], [b for _, b in pairs])


def score_pairs(scores: Sequence[AnnotationScore], results: Sequence[AnnotationResult],
                first: str, second: str) -> dict[str, tuple[list, list]]:
    """Dimension -> (round-1 pairs, pairs after reconciliation) of (first, second) scores.

    After reconciliation an item takes its round-2 scores where it went to round 2 and its
    round-1 scores where they agreed; items with a missing answer are left out of "after".
    """
    by_item: dict[tuple[str, str], dict[tuple[str, int], int]] = defaultdict(dict)
    for s in scores:
        by_item[(s.run_id, s.dimension)][(s.annotator, s.round)] = s.score
    status = {(r.run_id, r.dimension): r.status for r in results}
    out: dict[str, tuple[list, list]] = {d: ([], []) for d in DIMENSIONS}
    for (run_id, dim), got in sorted(by_item.items()):
        if dim not in out or (first, 1) not in got or (second, 1) not in got:
            continue
        before = (got[(first, 1)], got[(second, 1)])
        out[dim][0].append(before)
        if status.get((run_id, dim), MISSING) == MISSING:
            continue
        if (first, 2) in got and (second, 2) in got:
            out[dim][1].append((got[(first, 2)], got[(second, 2)]))
        else:
            out[dim][1].append(before)
    return out


def _level5(results: Sequence[AnnotationResult], runs: Mapping[str, RunKey], *, n_resamples: int,
            seed: int, confidence: float) -> dict[str, dict[str, Rate]]:
    final: dict[str, dict[str, int]] = defaultdict(dict)
    for r in results:
        if r.status in (AGREED, RECONCILED) and r.score is not None and r.run_id in runs:
            final[r.run_id][r.dimension] = r.score
    groups: dict[str, list[RunValue]] = defaultdict(list)
    for run_id, dims in sorted(final.items()):
        run = runs[run_id]
        for dim, score in dims.items():
            groups[f"{run.attacker}/{dim}"].append(RunValue(run.task_id, float(score == LEVEL_TOP)))
        groups[f"{run.attacker}/{ALL}"].append(
            RunValue(run.task_id, float(sum(s == LEVEL_TOP for s in dims.values())), float(len(dims))))
    rates = bootstrap_rates(groups, [r.task_id for r in runs.values()], n_resamples=n_resamples,
                            seed=seed, confidence=confidence)
    out: dict[str, dict[str, Rate]] = defaultdict(dict)
    for key, rate in rates.items():
        attacker, dim = key.rsplit("/", 1)
        out[attacker][dim] = rate
    return {a: dict(v) for a, v in sorted(out.items())}


def bootstrap_rates(groups: Mapping[str, Sequence[RunValue]], tasks: Sequence[Hashable], *,
                    n_resamples: int, seed: int, confidence: float) -> dict[str, Rate]:
    """Ratio-of-sums rate per group with its task-bootstrap interval (groups share resamples)."""
    groups = {k: list(v) for k, v in groups.items() if v}
    if not groups:
        return {}
    task_list = sorted(set(tasks) | {v.task_id for values in groups.values() for v in values})
    result = cluster_bootstrap(groups, n_resamples=n_resamples, seed=seed, confidence=confidence,
                               tasks=task_list)
    resampled = len(task_list) >= 2
    out = {}
    for key, values in groups.items():
        interval = result.interval(key)
        low, high = (interval.low, interval.high) if resampled else (float("nan"), float("nan"))
        out[key] = Rate(key, sequential_sum(v.numerator for v in values),
                        sequential_sum(v.denominator for v in values),
                        interval.estimate, low, high)
    return out


def same_model(a: str, b: str, fingerprints: Mapping[str, str]) -> bool:
    """The same registry name, or the same known weights fingerprint."""
    return a == b or bool(fingerprints.get(a)) and fingerprints.get(a) == fingerprints.get(b)


def annotator_bias(scores: Sequence[AnnotationScore], runs: Mapping[str, RunKey], first: str,
                   second: str, fingerprints: Mapping[str, str], *, n_resamples: int, seed: int,
                   confidence: float) -> tuple[AnnotatorBias, ...]:
    """Per annotator whose model produced some runs: own score minus the other's (round 1)."""
    round1: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for s in scores:
        if s.round == 1:
            round1[(s.run_id, s.dimension)][s.annotator] = s.score
    groups: dict[str, list[RunValue]] = {}
    own_runs: dict[str, set[str]] = defaultdict(set)
    for me, other in ((first, second), (second, first)):
        per_run: dict[str, list[int]] = defaultdict(list)
        for (run_id, _), got in sorted(round1.items()):
            run = runs.get(run_id)
            if run is None or me not in got or other not in got:
                continue
            if same_model(me, run.attacker, fingerprints):
                per_run[run_id].append(got[me] - got[other])
        if per_run:
            groups[me] = [RunValue(runs[r].task_id, float(sum(d)), float(len(d)))
                          for r, d in sorted(per_run.items())]
            own_runs[me] = set(per_run)
    rates = bootstrap_rates(groups, [r.task_id for r in runs.values()], n_resamples=n_resamples,
                            seed=seed, confidence=confidence)
    other_of = {first: second, second: first}
    return tuple(AnnotatorBias(me, other_of[me], len(own_runs[me]), rates[me]) for me in sorted(rates))


def annotation_audit(rows: FollowupRows, *, n_resamples: int = DEFAULT_RESAMPLES,
                     seed: int = DEFAULT_SEED,
                     confidence: float = DEFAULT_CONFIDENCE) -> tuple[PairAudit, ...]:
    audits = []
    for pair in sorted({r.annotators for r in rows.results}):
        first, second = pair.split(",")
        results = [r for r in rows.results if r.annotators == pair]
        pairs = score_pairs([s for s in rows.scores if s.annotators == pair], results, first, second)
        dims = []
        for d in DIMENSIONS:
            counts = {s: sum(r.status == s for r in results if r.dimension == d) for s in STATUSES}
            dims.append(DimensionAgreement(d, _safe_agreement(pairs[d][0]),
                                           _safe_agreement(pairs[d][1]), counts))
        pooled = DimensionAgreement(
            ALL, _safe_agreement([p for d in DIMENSIONS for p in pairs[d][0]]),
            _safe_agreement([p for d in DIMENSIONS for p in pairs[d][1]]),
            {s: sum(r.status == s for r in results) for s in STATUSES})
        options = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
        pair_scores = [s for s in rows.scores if s.annotators == pair]
        audits.append(PairAudit(pair, tuple(dims), pooled, _level5(results, rows.runs, **options),
                                annotator_bias(pair_scores, rows.runs, first, second,
                                               rows.fingerprints, **options)))
    return tuple(audits)


def interrogation_audit(rows: FollowupRows, *, n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = DEFAULT_SEED,
                        confidence: float = DEFAULT_CONFIDENCE) -> tuple[InterrogationCell, ...]:
    cells: dict[tuple[str, str, str], list] = defaultdict(list)
    for i in rows.interrogations:
        own = same_model(i.model, rows.runs[i.run_id].attacker, rows.fingerprints)
        cells[(i.model, "own" if own else "other", i.condition)].append(i)
    groups = {f"{metric}/{model}/{source}/{condition}": [
        RunValue(rows.runs[i.run_id].task_id, float(getattr(i, metric))) for i in items]
        for (model, source, condition), items in cells.items() for metric in INTERROGATION_METRICS}
    rates = bootstrap_rates(groups, [r.task_id for r in rows.runs.values()],
                            n_resamples=n_resamples, seed=seed, confidence=confidence)
    order = {c: i for i, c in enumerate(CONDITIONS)}

    def sort_key(kv: tuple[tuple[str, str, str], list]) -> tuple:
        model, source, condition = kv[0]
        base, _, mode = condition.partition("+")
        return model, source != "own", mode, order.get(base, 99)

    out = []
    for (model, source, condition), items in sorted(cells.items(), key=sort_key):
        out.append(InterrogationCell(model, condition, len(items), sum(i.valid for i in items),
                                     {m: rates[f"{m}/{model}/{source}/{condition}"]
                                      for m in INTERROGATION_METRICS}, source))
    return tuple(out)


def followups_audit(rows: FollowupRows, *, n_resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE) -> FollowupsAudit:
    options = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    return FollowupsAudit(rejudge_comparisons(rows), annotation_audit(rows, **options),
                          interrogation_audit(rows, **options), n_resamples, seed, confidence)
