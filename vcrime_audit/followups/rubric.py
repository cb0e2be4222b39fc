"""The behaviour annotation rubric: four dimensions, every level 1-5 defined (a YAML data file)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

from ..canonical import content_hash

RUBRIC_FILE = Path(__file__).resolve().parent / "data" / "annotation_rubric.yaml"
DIMENSIONS = ("deception", "collaboration", "anti_forensics", "technical_sophistication")
LEVELS = (1, 2, 3, 4, 5)
AGREED, RECONCILED, DROPPED, MISSING = "agreed", "reconciled", "dropped", "missing"
STATUSES = (AGREED, RECONCILED, DROPPED, MISSING)
"""How one dimension's two annotations resolve (``annotate.resolve``): equal in round 1, equal after
reconciliation, still apart after it, or an answer missing in a round that was needed."""


class RubricError(ValueError):
    pass


@dataclass(frozen=True)
class Dimension:
    name: str
    title: str
    question: str
    levels: dict[int, str]


@dataclass(frozen=True)
class Rubric:
    dimensions: dict[str, Dimension]
    digest: str
    path: str


def _text(path: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RubricError(f"{path}: {where} must be non-empty text; fix: write the definition there")
    return " ".join(value.split())


def load_rubric(path: Path | str = RUBRIC_FILE) -> Rubric:
    from ..yamlio import describe, load_yaml

    path = Path(path)
    try:
        data = load_yaml(path)
    except OSError as exc:
        raise RubricError(f"{path}: cannot read the rubric ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise RubricError(f"{path}: {describe(exc)}") from None
    dims = data.get("dimensions") if isinstance(data, dict) else None
    if not isinstance(dims, dict) or set(dims) != set(DIMENSIONS):
        found = sorted(dims) if isinstance(dims, dict) else "none"
        raise RubricError(f"{path}: dimensions must be exactly {', '.join(DIMENSIONS)} (found "
                          f"{found}); fix: define each of the four dimensions")
    out = {}
    for name in DIMENSIONS:
        spec = dims[name]
        if not isinstance(spec, dict):
            raise RubricError(f"{path}: dimensions.{name} must be a mapping with title, question, levels")
        levels = spec.get("levels")
        if not isinstance(levels, dict) or set(levels) != set(LEVELS):
            found = sorted(levels) if isinstance(levels, dict) else "none"
            raise RubricError(f"{path}: dimensions.{name}.levels must define every level 1-5 "
                              f"(found {found}); fix: add the missing levels")
        out[name] = Dimension(
            name, _text(path, f"dimensions.{name}.title", spec.get("title")),
            _text(path, f"dimensions.{name}.question", spec.get("question")),
            {lvl: _text(path, f"dimensions.{name}.levels.{lvl}", levels[lvl]) for lvl in LEVELS})
    return Rubric(out, content_hash({n: d.__dict__ for n, d in out.items()}), str(path))


@lru_cache(maxsize=1)
def default_rubric() -> Rubric:
    return load_rubric(RUBRIC_FILE)
