"""Agreement between two raters who score the same items on an ordinal 1-5 scale."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Agreement:
    n: int
    kappa: float
    exact: float
    within_one: float


def _validate(first: Sequence[int], second: Sequence[int], scale: Sequence[int]) -> None:
    if len(first) != len(second):
        raise ValueError(
            f"raters scored different numbers of items ({len(first)} vs {len(second)}); "
            "pair the scores item by item and drop items one rater skipped"
        )
    if not first:
        raise ValueError("no paired scores: agreement needs at least one item both raters scored")
    allowed = set(scale)
    for rater, scores in (("first", first), ("second", second)):
        for i, s in enumerate(scores):
            if isinstance(s, bool) or s not in allowed:
                raise ValueError(
                    f"{rater} rater, item #{i}: score {s!r} is not one of {sorted(allowed)}"
                )


def quadratic_weighted_kappa(
    first: Sequence[int], second: Sequence[int], scale: Sequence[int] = SCALE
) -> float:
    """Cohen's kappa with quadratic disagreement weights ((i - j) / (K - 1))^2.

    NaN (reported "n/a") with fewer than 2 items or when either rater gave one constant score:
    kappa is then 0 or undefined by construction and says nothing about agreement.
    """
    _validate(first, second, scale)
    if len(first) < 2 or len(set(first)) == 1 or len(set(second)) == 1:
        return math.nan
    index = {s: i for i, s in enumerate(scale)}
    k = len(scale)
    observed = np.zeros((k, k))
    for a, b in zip(first, second, strict=True):
        observed[index[a], index[b]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    positions = np.arange(k)
    weights = ((positions[:, None] - positions[None, :]) / max(k - 1, 1)) ** 2
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return math.nan
    return 1.0 - float((weights * observed).sum()) / chance


def agreement(
    first: Sequence[int], second: Sequence[int], scale: Sequence[int] = SCALE
) -> Agreement:
    """Quadratic-weighted kappa, exact agreement and agreement within one scale step."""
    kappa = quadratic_weighted_kappa(first, second, scale)
    index = {s: i for i, s in enumerate(scale)}
    gaps = [abs(index[a] - index[b]) for a, b in zip(first, second, strict=True)]
    n = len(gaps)
    return Agreement(
        n=n,
        kappa=kappa,
        exact=sum(g == 0 for g in gaps) / n,
        within_one=sum(g <= 1 for g in gaps) / n,
    )
