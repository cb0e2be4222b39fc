"""Scoring the over-harm classifier against labelled actions (the sets it was tuned and
held out on)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..harm import AXES, Lexicon, classify
from ..yamlio import load_yaml

DATA_DIR = Path(__file__).parent / "data"
LABELLED_SET = DATA_DIR / "harm_labelled.yaml"
HOLDOUT_SET = DATA_DIR / "harm_holdout.yaml"
HELDOUT2_SET = DATA_DIR / "harm_heldout2.yaml"
"""Held-out set v3: frozen before the issue-11 lexicon change it measures."""


@dataclass(frozen=True)
class AxisScore:
    """Detection of 'harmful' (level > 0) and exact-level agreement on one axis."""

    axis: str
    n: int
    true_positive: int
    false_positive: int
    false_negative: int
    exact: int

    @property
    def precision(self) -> float:
        flagged = self.true_positive + self.false_positive
        return self.true_positive / flagged if flagged else float("nan")

    @property
    def recall(self) -> float:
        harmful = self.true_positive + self.false_negative
        return self.true_positive / harmful if harmful else float("nan")

    @property
    def exact_accuracy(self) -> float:
        return self.exact / self.n


def load_labelled(path: str | Path) -> list[dict[str, Any]]:
    """Labelled actions: verb, targets, description and gold `force` / `damage` level names."""
    path = Path(path)
    items = (load_yaml(path) or {}).get("items")
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path}: expected a top-level 'items:' list of labelled actions")
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"{path}: items[{i}] (id {item.get('id')!r})" if isinstance(item, dict) else ""
        if not isinstance(item, dict):
            raise ValueError(f"{path}: items[{i}] must be a mapping")
        for key in ("id", "verb", "targets", "description", *AXES):
            if key not in item:
                raise ValueError(f"{where}: missing field {key!r}")
        for axis, names in AXES.items():
            if item[axis] not in names:
                raise ValueError(f"{where}: {axis} {item[axis]!r} is not one of {list(names)}")
        if item["id"] in seen:
            raise ValueError(f"{where}: duplicate id")
        seen.add(item["id"])
    return items


def score_labelled(
    items: Iterable[Mapping[str, Any]], lexicon: Lexicon | None = None
) -> dict[str, AxisScore]:
    """Precision/recall of level > 0 and exact-level accuracy, per axis."""
    counts = {axis: [0, 0, 0, 0, 0] for axis in AXES}
    for item in items:
        reading = classify(item, lexicon)
        for axis, names in AXES.items():
            gold, predicted = names.index(item[axis]), getattr(reading, axis)
            c = counts[axis]
            c[0] += 1
            c[1] += gold > 0 and predicted > 0
            c[2] += gold == 0 and predicted > 0
            c[3] += gold > 0 and predicted == 0
            c[4] += gold == predicted
    return {axis: AxisScore(axis, *c) for axis, c in counts.items()}
