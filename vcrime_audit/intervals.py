"""Intervals on a proportion: the one ``Interval`` and the binomial intervals (Clopper–Pearson,
Wilson) that the audit and the certificate share."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval [low, high]."""

    estimate: float
    low: float
    high: float


def _check_counts(k: int, n: int) -> None:
    if int(k) != k or int(n) != n:
        raise ValueError(f"k and n must be whole numbers, got k={k}, n={n}")
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need n >= 1 and 0 <= k <= n, got k={k}, n={n}")


def clopper_pearson(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Exact two-sided binomial interval for k successes in n trials."""
    from scipy.special import betaincinv  # imported on first use: most audits never need scipy

    _check_counts(k, n)
    alpha = 1.0 - confidence
    low = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, alpha / 2.0))
    high = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1.0 - alpha / 2.0))
    return Interval(k / n, low, high)


def wilson(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """Wilson score interval for k successes in n trials."""
    _check_counts(k, n)
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return Interval(p, low, high)
