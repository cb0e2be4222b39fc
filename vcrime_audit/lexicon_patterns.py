"""A lexicon's regular expressions, compiled only when they pay: each pattern when a text may
match it, the screen (the alternation of them all) once a job has checked enough texts in full."""

from __future__ import annotations

import re

from .regex_literals import required_literals

_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


class LexiconError(ValueError):
    pass


class LexiconPattern:
    """A lexicon pattern (macros expanded), compiled the first time a text may match it: a text
    without any of the literals every match holds (:func:`required_literals`) is not searched.
    Loading the shipped lexicon compiled all 211 patterns first, ~0.4 s of a one-cassette
    replay's ~0.8 s; a turn's two texts need a few of them."""

    __slots__ = ("pattern", "needs", "_written", "_where", "_regex")

    def __init__(self, pattern: str, written: str, where: str) -> None:
        self.pattern = pattern
        self.needs = required_literals(pattern)
        self._written, self._where = written, where
        self._regex: re.Pattern[str] | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            try:
                self._regex = re.compile(self.pattern)
            except re.error as exc:
                raise LexiconError(f"{self._where}: invalid regular expression ({exc}): "
                                   f"{self._written}") from None
        return self._regex

    def may_match(self, text: str) -> bool:
        needs = self.needs
        return needs is None or any(literal in text for literal in needs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LexiconPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"LexiconPattern({self.pattern!r})"


class Screen:
    """The alternation of every pattern, compiled only once it pays: a big alternation costs
    more to compile than the first few hundred segments cost to check in full. Until then
    ``search`` answers "may match", which sends the segment through the full check, so the
    readings are the same either way."""

    EAGER_SEGMENTS = 500

    def __init__(self, source: str) -> None:
        self.pattern, self._compiled, self._misses = source, None, 0

    def search(self, text: str) -> re.Match[str] | bool | None:
        if self._compiled is None:
            self._misses += 1
            if self._misses <= self.EAGER_SEGMENTS:
                return True
            self.compile()
        assert self._compiled is not None
        return self._compiled.search(text)

    def compile(self) -> None:
        """Compile the alternation now (~0.4 s): a job that will read many segments does it
        before it starts, not in the middle of its work."""
        if self._compiled is None:
            try:
                self._compiled = re.compile(self.pattern)
            except re.error:
                self._compiled = re.compile("")  # matches everywhere: every segment is checked

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Screen) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)


def screen_of(regexes: list[LexiconPattern]) -> Screen | None:
    if not regexes:
        return None
    unnamed = (_NAMED_GROUP.sub("(?:", r.pattern) for r in regexes)
    return Screen("|".join(f"(?:{p})" for p in unnamed))
