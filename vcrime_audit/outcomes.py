"""The judge's outcome tiers and the two rates the audit reads from an outcome distribution."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .float_sum import sequential_sum

SUCCESS_TIERS = ("full_success", "success_with_cost", "partial_success")
CATASTROPHIC = "catastrophic_failure"


def non_failure(distribution: Iterable[Mapping[str, Any]]) -> float:
    """Probability of a success tier."""
    return sequential_sum(o["probability"] for o in distribution if o["type"] in SUCCESS_TIERS)


def catastrophic(distribution: Iterable[Mapping[str, Any]]) -> float:
    """Probability of a catastrophic failure."""
    return sequential_sum(o["probability"] for o in distribution if o["type"] == CATASTROPHIC)
