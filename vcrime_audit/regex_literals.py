"""What every match of a regular expression holds, read from the expression: a formula of
literals (all of these, one of those) that a text must hold for the expression to match in it.
A text that does not hold the formula need not be searched, and the expression need not even be
compiled for it.

The expression is read by the standard library's own parser (``re._parser``), so the formula
follows its syntax exactly. Only what every match must consume is kept: runs of literal
characters (across zero-width assertions such as ``\\b``), groups, alternatives, and what is
repeated at least once. Anything else (a class, an escape, a look-around, a back-reference, an
optional part, case-insensitive flags) is a gap that asks for nothing. ``tests/test_regex_literals.py``
checks the claim on texts generated to match.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

try:  # Python 3.11 renamed the modules the standard library's own re uses
    from re import _constants as _codes
    from re import _parser as _syntax
except ImportError:  # pragma: no cover -- Python 3.10
    import sre_constants as _codes  # type: ignore[no-redef]
    import sre_parse as _syntax  # type: ignore[no-redef]

ALL, ANY = "all", "any"
Formula = bool | str | tuple[str, tuple["Formula", ...]]
"""``True`` (any text), a literal (the text holds it), or ``(ALL, parts)`` / ``(ANY, parts)``."""

_REPEATS = tuple(getattr(_codes, name) for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
                 if hasattr(_codes, name))


def literal_formula(pattern: str) -> Formula:
    """The formula every text that ``pattern`` (``re`` syntax, compiled without flags) matches in
    holds. Raises ``re.error`` for an invalid pattern."""
    parsed = _syntax.parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return True
    return _sequence(parsed, "")


def holds(formula: Formula, text: str) -> bool:
    if formula is True:
        return True
    if type(formula) is str:
        return formula in text
    kind, parts = formula  # type: ignore[misc]
    if kind is ALL:
        for part in parts:
            if not (part in text if type(part) is str else holds(part, text)):
                return False
        return True
    for part in parts:
        if part in text if type(part) is str else holds(part, text):
            return True
    return False


def anchors(formula: Formula) -> frozenset[str] | None:
    """Literals one of which every text that holds ``formula`` holds (the fewest and longest the
    formula offers), or None when it asks for nothing."""
    if formula is True:
        return None
    if type(formula) is str:
        return frozenset({formula})
    kind, parts = formula  # type: ignore[misc]
    found = [anchors(part) for part in parts]
    if kind is ANY:
        return None if any(f is None for f in found) else frozenset().union(*found)  # type: ignore[arg-type]
    known = [f for f in found if f is not None]
    return max(known, key=lambda f: (min(map(len, f)), -len(f))) if known else None


def literals(formula: Formula) -> Iterator[str]:
    """Every literal the formula names."""
    if type(formula) is str:
        yield formula
    elif formula is not True:
        for part in formula[1]:  # type: ignore[index]
            yield from literals(part)


def _sequence(items: list[tuple[object, object]], prefix: str) -> Formula:
    """The formula of a sequence of the parser's items, whose matches follow ``prefix``
    directly: the literals before a group, alternatives or a repeat are put in front of what
    they hold (the parser moves the common start of alternatives out in front of them)."""
    parts: list[Formula] = []
    run = [prefix] if prefix else []
    for code, value in items:
        if code is _codes.LITERAL:
            run.append(chr(value))  # type: ignore[arg-type]
        elif code is _codes.AT:
            continue  # zero-width: the characters around it are still side by side
        elif code is _codes.SUBPATTERN and not value[1] & re.IGNORECASE:  # type: ignore[index]
            parts.append(_sequence(value[3], "".join(run)))  # type: ignore[index]
            run = []
        elif code is _codes.BRANCH:
            lead = "".join(run)
            parts.append(_any([_sequence(branch, lead) for branch in value[1]]))  # type: ignore[index]
            run = []
        elif code in _REPEATS and value[0] >= 1:  # type: ignore[index]
            parts.append(_sequence(value[2], "".join(run)))  # type: ignore[index]
            run = []  # the first repetition follows the run directly
        elif run:
            parts.append("".join(run))
            run = []
    if run:
        parts.append("".join(run))
    return _all(parts)


def _all(parts: list[Formula]) -> Formula:
    kept = _joined(ALL, [part for part in parts if part is not True])
    kept.sort(key=lambda part: type(part) is not str)  # plain literals first: the cheapest tests
    if not kept:
        return True
    return kept[0] if len(kept) == 1 else (ALL, tuple(kept))


def _any(parts: list[Formula]) -> Formula:
    if any(part is True for part in parts):
        return True
    kept = _joined(ANY, parts)
    return kept[0] if len(kept) == 1 else (ANY, tuple(kept))


def _joined(kind: str, parts: list[Formula]) -> list[Formula]:
    """``parts`` with the parts of each of the same ``kind`` in their place, each once."""
    kept: list[Formula] = []
    for part in parts:
        if isinstance(part, tuple) and part[0] is kind:
            kept.extend(part[1])
        else:
            kept.append(part)
    return list(dict.fromkeys(kept))
