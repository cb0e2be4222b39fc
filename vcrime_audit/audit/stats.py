"""Task-clustered bootstrap, paired attacker differences and rank correlation.

The bootstrap resamples tasks with replacement; every run of a drawn task comes along.
Each statistic is a ratio of sums: sum of run numerators over sum of run denominators.
A run-level mean is the special case where every denominator is 1; a turn-level rate
uses per-run sums over turns (e.g. numerator = summed non-failure probability,
denominator = number of turns).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.ma  # noqa: F401 -- numpy loads these two on first use (np.quantile, default_rng);
import numpy.random  # noqa: F401 -- loaded before the audit forks, its children share them

from ..defaults import DEFAULT_RESAMPLES
from ..intervals import DEFAULT_CONFIDENCE, Interval

DEFAULT_SEED = 20_250_101
_MAX_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class RunValue:
    """One run's contribution: its task and the sums it adds to the ratio."""

    task_id: Hashable
    numerator: float
    denominator: float = 1.0


@dataclass(frozen=True)
class TaskTotals:
    """Per-task sums, shape (n_tasks, n_groups), rows in `tasks` order."""

    groups: tuple[str, ...]
    tasks: tuple[Hashable, ...]
    numerators: np.ndarray
    denominators: np.ndarray
    n_runs: tuple[int, ...]


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimates, percentile intervals and the replicate matrix (n_resamples, n_groups)."""

    groups: tuple[str, ...]
    tasks: tuple[Hashable, ...]
    estimates: np.ndarray
    low: np.ndarray
    high: np.ndarray
    replicates: np.ndarray
    n_undefined: np.ndarray
    n_runs: tuple[int, ...]
    seed: int
    n_resamples: int
    confidence: float

    def interval(self, group: str) -> Interval:
        i = self._index(group)
        return Interval(float(self.estimates[i]), float(self.low[i]), float(self.high[i]))

    def _index(self, group: str) -> int:
        try:
            return self.groups.index(group)
        except ValueError:
            raise KeyError(f"group {group!r} not in bootstrap result; have {self.groups}") from None


@dataclass(frozen=True)
class PairedDifference:
    """first minus second, with its interval from the shared task resamples.

    `p_value`: two-sided paired-bootstrap p-value (`bootstrap_p_value`); `p_holm`: the same after
    Holm's step-down adjustment over a family of tests (`with_holm`); NaN when undefined.
    `undefined`: resamples where the difference is undefined (left out of the interval).
    """

    first: str
    second: str
    estimate: float
    low: float
    high: float
    p_value: float = math.nan
    p_holm: float = math.nan
    undefined: int = 0

    @property
    def significant(self) -> bool:
        return bool(self.low > 0.0 or self.high < 0.0)

    def significant_holm(self, alpha: float) -> bool:
        return bool(self.p_holm < alpha)


def bootstrap_p_value(differences: np.ndarray) -> float:
    """Two-sided p-value of 'difference = 0' from paired bootstrap differences.

    p = min(1, 2 * min(#(d <= 0) + 1, #(d >= 0) + 1) / (B + 1)) over the B defined resamples;
    the +1 keeps p above 0 with finitely many resamples. NaN when no resample is defined.
    """
    d = differences[~np.isnan(differences)]
    if d.size == 0:
        return math.nan
    below, above = int((d <= 0).sum()), int((d >= 0).sum())
    return min(1.0, 2.0 * (min(below, above) + 1) / (d.size + 1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN and does not count towards m)."""
    defined = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    m = len(defined)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(defined):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def _check_run(group: str, position: int, run: RunValue) -> None:
    where = f"group {group!r}, run #{position} (task {run.task_id!r})"
    if not (math.isfinite(run.numerator) and math.isfinite(run.denominator)):
        raise ValueError(f"{where}: numerator and denominator must be finite numbers")
    if run.denominator < 0:
        raise ValueError(f"{where}: denominator {run.denominator} is negative; use a count >= 0")
    if run.denominator == 0 and run.numerator != 0:
        raise ValueError(
            f"{where}: numerator {run.numerator} with denominator 0; a run with nothing to "
            "count must contribute 0/0"
        )


def task_totals(
    groups: Mapping[str, Iterable[RunValue]], tasks: Sequence[Hashable] | None = None
) -> TaskTotals:
    """Sum run numerators and denominators per (task, group).

    `tasks` fixes the task order; by default it is the sorted union of every group's tasks.
    A task a group never ran contributes 0/0 for that group.
    """
    if not groups:
        raise ValueError("no groups given: pass a mapping of group name -> runs")
    materialised = {name: list(runs) for name, runs in groups.items()}
    for name, runs in materialised.items():
        if not runs:
            raise ValueError(f"group {name!r} has no runs")
        for position, run in enumerate(runs):
            _check_run(name, position, run)
    if tasks is None:
        seen = {run.task_id for runs in materialised.values() for run in runs}
        tasks = sorted(seen, key=lambda t: (str(type(t)), t))
    task_index = {task: i for i, task in enumerate(tasks)}
    if len(task_index) != len(tasks):
        raise ValueError("tasks contains duplicates")
    names = tuple(materialised)
    num = np.zeros((len(tasks), len(names)))
    den = np.zeros((len(tasks), len(names)))
    for g, name in enumerate(names):
        for run in materialised[name]:
            if run.task_id not in task_index:
                raise ValueError(f"group {name!r}: task {run.task_id!r} is not in the task list")
            t = task_index[run.task_id]
            num[t, g] += run.numerator
            den[t, g] += run.denominator
    n_runs = tuple(len(materialised[name]) for name in names)
    return TaskTotals(names, tuple(tasks), num, den, n_runs)


def resample_indices(n_tasks: int, n_resamples: int, seed: int) -> np.ndarray:
    """Task indices drawn with replacement, shape (n_resamples, n_tasks)."""
    if n_tasks < 1:
        raise ValueError("need at least one task to resample")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_tasks, size=(n_resamples, n_tasks))


def task_counts(indices: np.ndarray, n_tasks: int) -> np.ndarray:
    """How often each task was drawn in each resample, shape (n_resamples, n_tasks)."""
    n_resamples = indices.shape[0]
    offsets = indices + n_tasks * np.arange(n_resamples)[:, None]
    counts = np.bincount(offsets.ravel(), minlength=n_resamples * n_tasks)
    return counts.reshape(n_resamples, n_tasks).astype(np.float64)


def replicate_ratios(
    numerators: np.ndarray, denominators: np.ndarray, indices: np.ndarray
) -> np.ndarray:
    """Ratio of sums for every resample and group; NaN where a resample's denominator is 0."""
    n_tasks = numerators.shape[0]
    block = max(1, _MAX_BLOCK_CELLS // max(n_tasks, 1))
    out = np.empty((indices.shape[0], numerators.shape[1]))
    for start in range(0, indices.shape[0], block):
        counts = task_counts(indices[start : start + block], n_tasks)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + block] = (counts @ numerators) / (counts @ denominators)
    return out


def percentile_interval(
    replicates: np.ndarray, confidence: float = DEFAULT_CONFIDENCE
) -> tuple[np.ndarray, np.ndarray]:
    """Column-wise percentile interval, ignoring undefined (NaN) replicates: ``np.quantile``'s
    default (linear) rule, bit for bit, with the columns that have no NaN done together."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    quantiles = np.array([alpha / 2.0, 1.0 - alpha / 2.0])
    low = np.full(replicates.shape[1], np.nan)
    high = np.full(replicates.shape[1], np.nan)
    undefined = np.isnan(replicates)
    whole = ~undefined.any(axis=0)
    if whole.any() and replicates.shape[0]:
        low[whole], high[whole] = column_quantiles(replicates[:, whole], quantiles)
    for g in np.flatnonzero(~whole).tolist():
        column = replicates[~undefined[:, g], g]
        if column.size:
            (low[g],), (high[g],) = column_quantiles(column[:, None], quantiles)
    return low, high


def column_quantiles(matrix: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """``np.quantile(matrix, quantiles, axis=0)`` for a matrix without NaN, by numpy's own
    arithmetic (``_quantile`` with the linear method: the index (n - 1) * q, its floor and the
    next one, ``_lerp``'s two formulas either side of a weight of 0.5), with one partition for every
    column instead of numpy's per-call set-up."""
    n = matrix.shape[0]
    virtual = (n - 1) * quantiles
    previous = np.floor(virtual)
    following = previous + 1
    last = virtual >= n - 1
    previous[last] = following[last] = -1
    previous, following = previous.astype(np.intp), following.astype(np.intp)
    part = np.partition(matrix, sorted({0, -1, *previous.tolist(), *following.tolist()}), axis=0)
    a, b = part[previous], part[following]
    gamma = (virtual - previous)[:, None]  # as numpy: from the index after the clipping to -1
    diff = b - a
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out


def cluster_bootstrap(
    groups: Mapping[str, Iterable[RunValue]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = DEFAULT_CONFIDENCE,
    tasks: Sequence[Hashable] | None = None,
) -> BootstrapResult:
    """Ratio-of-sums estimate and percentile interval per group, resampling tasks.

    All groups share one set of resampled task indices, so replicate columns are paired
    by task and `paired_differences` can compare them.
    """
    totals = task_totals(groups, tasks)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimates = totals.numerators.sum(axis=0) / totals.denominators.sum(axis=0)
    indices = resample_indices(len(totals.tasks), n_resamples, seed)
    replicates = replicate_ratios(totals.numerators, totals.denominators, indices)
    low, high = percentile_interval(replicates, confidence)
    return BootstrapResult(
        groups=totals.groups,
        tasks=totals.tasks,
        estimates=estimates,
        low=low,
        high=high,
        replicates=replicates,
        n_undefined=np.isnan(replicates).sum(axis=0),
        n_runs=totals.n_runs,
        seed=seed,
        n_resamples=n_resamples,
        confidence=confidence,
    )


def paired_differences(result: BootstrapResult) -> list[PairedDifference]:
    """Every pair (first, second) in group order: first - second with its paired interval."""
    out: list[PairedDifference] = []
    for i, j in combinations(range(len(result.groups)), 2):
        diffs = result.replicates[:, i] - result.replicates[:, j]
        low, high = percentile_interval(diffs[:, None], result.confidence)
        out.append(
            PairedDifference(
                first=result.groups[i],
                second=result.groups[j],
                estimate=float(result.estimates[i] - result.estimates[j]),
                low=float(low[0]),
                high=float(high[0]),
                p_value=bootstrap_p_value(diffs),
                undefined=int(np.isnan(diffs).sum()),
            )
        )
    return out


def average_ranks(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Ranks starting at 1; tied values share the mean of the ranks they span."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError("average_ranks takes a one-dimensional sequence")
    order = np.argsort(x, kind="mergesort")
    ordered = x[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]] if x.size else np.array([], bool)
    group_id = np.cumsum(starts_group) - 1
    starts = np.flatnonzero(starts_group)
    ends = np.r_[starts[1:], x.size]
    mean_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(x.size)
    ranks[order] = mean_rank[group_id]
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho with average ranks for ties; NaN when either side is constant."""
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"spearman needs two 1-D sequences of equal length, got {a.shape} and {b.shape}"
        )
    if a.size < 2:
        raise ValueError("spearman needs at least two paired values")
    if np.isnan(a).any() or np.isnan(b).any():
        raise ValueError("spearman got NaN values; drop incomplete pairs first")
    ra = average_ranks(a) - (a.size + 1) / 2.0
    rb = average_ranks(b) - (b.size + 1) / 2.0
    scale = math.sqrt(float(ra @ ra) * float(rb @ rb))
    if scale == 0.0:
        return math.nan
    return float(ra @ rb) / scale
