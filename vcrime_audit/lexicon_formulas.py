"""The shipped lexicon's literal formulas, read once and kept beside it.

Reading a pattern's formula (:func:`regex_literals.literal_formula`) parses it with the standard
library's own parser: ~0.2 s for the shipped lexicon's 211 patterns, which every process that
replays or verifies runs paid at its start (a paper-size re-check starts four). The table holds
each pattern's formula as that code made it, with what made it: the Python version (its parser)
and the blake2b of ``regex_literals.py``. A table made by other code is not used (each formula is
then read again), so a stale table costs time, never a reading. ``tests/test_lexicon_formulas.py``
fails when the shipped table is stale; make it again with::

    python scripts/make_lexicon_formulas.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import regex_literals
from .lexicon_patterns import LexiconPattern
from .regex_literals import ALL, ANY, Formula

TABLE = Path(__file__).parent / "audit" / "data" / "harm_lexicon_formulas.json"


@lru_cache(maxsize=1)
def made_by() -> dict[str, str]:
    """What a table made here and now would say made it."""
    code = Path(regex_literals.__file__).read_bytes()
    return {"python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "regex_literals": hashlib.blake2b(code, digest_size=16).hexdigest()}


def pattern_key(pattern: str) -> str:
    """A pattern's key in the table: the blake2b of its text (the shipped lexicon's expanded
    patterns hold ~200 KB of text)."""
    return hashlib.blake2b(pattern.encode("utf-8"), digest_size=16).hexdigest()


def table_of(patterns: Iterable[LexiconPattern]) -> dict[str, Any]:
    """The table of ``patterns``' formulas, read now (raises ``re.error`` for an invalid one)."""
    formulas = {pattern_key(p.pattern): regex_literals.literal_formula(p.pattern) for p in patterns}
    return {"made_by": made_by(), "formulas": formulas, "checksum": _checksum(formulas)}


def _checksum(formulas: Any) -> str:
    return hashlib.blake2b(json.dumps(formulas, sort_keys=True, separators=(",", ":")).encode("utf-8"),
                           digest_size=16).hexdigest()


def known_formulas(path: Path = TABLE) -> dict[str, Formula]:
    """The formulas a table holds, by :func:`pattern_key`; none from a table made by other code, or
    one that cannot be read as a table or whose formulas do not match its checksum (then every
    formula is read again: the same readings)."""
    try:
        table = json.loads(path.read_bytes())
        if table["made_by"] != made_by() or table["checksum"] != _checksum(table["formulas"]):
            return {}
        return {key: _formula(value) for key, value in table["formulas"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return {}


def _formula(value: Any) -> Formula:
    """A formula from its JSON: ``true``, a literal, or ``[kind, [parts...]]``."""
    if value is True or type(value) is str:
        return value
    kind, parts = value
    if kind not in (ALL, ANY) or type(parts) is not list:
        raise ValueError(f"not a formula: {value!r}")
    return (ALL if kind == ALL else ANY, tuple(_formula(part) for part in parts))


def fill(patterns: Iterable[LexiconPattern], known: dict[str, Formula]) -> None:
    """Give each pattern the formula ``known`` holds for it, if any."""
    for pattern in patterns:
        formula = known.get(pattern_key(pattern.pattern)) if known else None
        if formula is not None:
            pattern.formula = formula


def write_table(patterns: Iterable[LexiconPattern], path: Path = TABLE) -> None:
    path.write_text(json.dumps(table_of(patterns), ensure_ascii=False, sort_keys=True,
                               separators=(",", ":")) + "\n", encoding="utf-8")
