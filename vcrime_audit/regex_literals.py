"""Literals one of which every match of a regular expression holds: a text that holds none of
them cannot match, and the expression need not even be compiled for it.

Read from the expression's text, for the shapes a lexicon's patterns take: top-level branches,
each starting (after an optional ``\\b``) with a run of literal characters or with a group of
alternatives that each start so. Anything else (a class, an escape, a macro's leftovers, flags, a
look-around, an optional group first) gives ``None``: no literals are known and every text is
checked. ``tests/test_regex_literals.py`` checks the claim on texts generated to match.
"""

from __future__ import annotations

import re

_LITERAL_RUN = re.compile(r"[a-z0-9' ]*")
"""Characters that stand for themselves in an expression compiled without flags."""
_TOKENS = re.compile(r"\\.|\[\^?\]?(?:\\.|[^\]\\])*\]|[()|]")
"""An escape, a whole character class, or a parenthesis or bar that is not inside either."""
_MAY_SKIP = ("?", "*", "{")
"""Quantifiers that let the character (or group) before them match nothing."""


def required_literals(pattern: str) -> frozenset[str] | None:
    """Literals one of which every match of ``pattern`` holds (``re`` syntax, no flags), or None
    when the pattern's shape says nothing."""
    found: set[str] = set()
    for branch in _branches(pattern):
        literals = _branch_literals(branch)
        if literals is None:
            return None
        found |= literals
    return frozenset(found)


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern``."""
    parts, depth, start = [], 0, 0
    for token in _TOKENS.finditer(pattern):
        text = token.group(0)
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
        elif text == "|" and depth == 0:
            parts.append(pattern[start:token.start()])
            start = token.end()
    parts.append(pattern[start:])
    return parts


def _leading_literal(text: str) -> str | None:
    run = _LITERAL_RUN.match(text)
    literal = run.group(0) if run else ""
    if text[len(literal):len(literal) + 1] in _MAY_SKIP:
        literal = literal[:-1]
    return literal or None


def _branch_literals(branch: str) -> set[str] | None:
    if branch.startswith(r"\b"):
        branch = branch[2:]
    if not branch.startswith("(?:"):
        literal = _leading_literal(branch)
        return None if literal is None else {literal}
    end = _group_end(branch)
    if end is None or branch[end + 1:end + 2] in _MAY_SKIP:
        return None
    found = set()
    for alternative in _branches(branch[3:end]):
        literal = _leading_literal(alternative)
        if literal is None:
            return None
        found.add(literal)
    return found


def _group_end(text: str) -> int | None:
    """Index of the parenthesis that closes the group ``text`` starts with."""
    depth = 0
    for token in _TOKENS.finditer(text):
        if token.group(0) == "(":
            depth += 1
        elif token.group(0) == ")":
            depth -= 1
            if depth == 0:
                return token.start()
    return None
