"""A lexicon's regular expressions, compiled only when a text may match them, and the screen that
tells apart, fast, the texts none of them can match."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .regex_literals import Formula, anchors, holds, literal_formula, literals

_STARTS = 3
"""Characters of a literal the screen looks up a text by."""


class LexiconError(ValueError):
    pass


class LexiconPattern:
    """A lexicon pattern (macros expanded), compiled the first time a text may match it: a text
    that does not hold the pattern's literal formula (:func:`literal_formula`, read when first
    needed) is not searched. Loading the shipped lexicon compiled all 211 patterns first, ~0.4 s
    of a one-cassette replay's ~0.8 s; a turn's two texts need a few of them."""

    __slots__ = ("pattern", "_written", "_where", "_regex", "_formula")

    def __init__(self, pattern: str, written: str, where: str) -> None:
        self.pattern = pattern
        self._written, self._where = written, where
        self._regex: re.Pattern[str] | None = None
        self._formula: Formula | None = None

    @property
    def regex(self) -> re.Pattern[str]:
        if self._regex is None:
            try:
                self._regex = re.compile(self.pattern)
            except re.error as exc:
                raise self._invalid(exc) from None
        return self._regex

    @property
    def formula(self) -> Formula:
        """What every text the pattern matches in holds."""
        if self._formula is None:
            try:
                self._formula = literal_formula(self.pattern)
            except re.error as exc:
                raise self._invalid(exc) from None
        return self._formula

    @formula.setter
    def formula(self, formula: Formula) -> None:
        """The formula as read before (:mod:`vcrime_audit.lexicon_formulas`)."""
        self._formula = formula

    def _invalid(self, exc: re.error) -> LexiconError:
        return LexiconError(f"{self._where}: invalid regular expression ({exc}): {self._written}")

    def may_match(self, text: str) -> bool:
        """False when the pattern cannot match in ``text``. A compiled pattern answers True: its
        search is as cheap as reading its formula the first time."""
        return self._regex is not None or holds(self.formula, text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LexiconPattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"LexiconPattern({self.pattern!r})"


class Screen:
    """Whether a text may match any of a lexicon's patterns, told from the literals their matches
    hold (each pattern's :attr:`LexiconPattern.formula`). Every text a pattern matches in holds
    one of the formula's anchor literals (:func:`anchors`): the screen looks a text up by its
    pieces of ``_STARTS`` characters among the anchors' starts, and checks the formula of each
    pattern an anchor found belongs to. A text it lets through is checked in full, so readings
    are the same with or without it.

    ``masked``: characters that masking may put into a text after the screen has read it (the
    exceptions' masks); a pattern with a literal that holds one is let through always. Any other
    literal a masked text holds, its text held before masking, so the screen holds for both.

    Reading every formula (~0.2 s for the shipped lexicon, whose formulas are kept instead:
    :mod:`.lexicon_formulas`) is left to the first text, or to :meth:`prepare` and
    :meth:`preparing`. The alternation of all 211 patterns it replaces took
    ~0.3 s to compile and 53 us a 38-character text; this takes ~6 us (6,770 segments of 120
    c960 runs: it lets 98 through, of which the patterns match none)."""

    def __init__(self, patterns: list[LexiconPattern], masked: str = "") -> None:
        self.patterns, self._masked = tuple(patterns), masked
        self._ready = False
        self._always = False
        self._short: list[tuple[str, Formula]] = []
        self._by_start: dict[str, list[tuple[str, Formula]]] = {}
        self._starts: frozenset[str] = frozenset()

    def search(self, text: str) -> bool:
        if not self._ready:
            self.prepare()
        if self._always:
            return True
        for literal, formula in self._short:
            if literal in text and holds(formula, text):
                return True
        by_start = self._by_start
        for start in self._starts.intersection([text[i:i + _STARTS]
                                                for i in range(len(text) - _STARTS + 1)]):
            for literal, formula in by_start[start]:
                if literal in text and holds(formula, text):
                    return True
        return False

    def prepare(self) -> None:
        for _ in self.preparing():
            pass

    def preparing(self) -> Iterator[None]:
        """Read the patterns' formulas one at a time, a step each, then index them."""
        if self._ready:
            return
        entries: dict[tuple[str, Formula], None] = {}
        always = False
        for pattern in self.patterns:
            formula = pattern.formula
            found = anchors(formula)
            if found is None or any(c in literal for literal in literals(formula) for c in self._masked):
                always = True
            else:
                entries.update(dict.fromkeys((literal, formula) for literal in sorted(found)))
            yield
        short: list[tuple[str, Formula]] = []
        by_start: dict[str, list[tuple[str, Formula]]] = {}
        for literal, formula in entries:
            if len(literal) < _STARTS:
                short.append((literal, formula))
            else:
                by_start.setdefault(literal[:_STARTS], []).append((literal, formula))
        self._short, self._by_start, self._starts = short, by_start, frozenset(by_start)
        self._always, self._ready = always, True

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Screen) and other.patterns == self.patterns
                and other._masked == self._masked)

    def __hash__(self) -> int:
        return hash((self.patterns, self._masked))


def screen_of(patterns: list[LexiconPattern], masked: str = "") -> Screen | None:
    return Screen(patterns, masked) if patterns else None
