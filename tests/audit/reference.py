"""Slow reference computations the audit's statistics are checked against."""

import math


def slow_percentile(values, q: float) -> float:
    """Linear interpolation between order statistics (numpy's default quantile rule), NaN left
    out as the bootstrap leaves out undefined resamples."""
    ordered = sorted(v for v in values if not math.isnan(v))
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])
