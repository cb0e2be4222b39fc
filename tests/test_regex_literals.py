"""`required_literals`: every text a pattern matches in holds one of the literals it names.
Checked on texts hypothesis generates to match, for generated patterns and for every pattern of
the shipped lexicon, and by searching random texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcrime_audit.harm import DEFAULT_LEXICON, load_lexicon
from vcrime_audit.regex_literals import required_literals

WORDS = st.text(alphabet="abcde' ", min_size=1, max_size=4)
QUANTIFIER = st.sampled_from(["", "", "?", "*", "+", "{0,2}", "{1,2}", "??", "+?"])


@st.composite
def atoms(draw, depth: int = 0) -> str:
    kind = draw(st.sampled_from(["word", "word", "escape", "class", "anchor", "group", "look"]
                                if depth < 2 else ["word", "escape", "class"]))
    if kind == "word":
        return draw(WORDS)
    if kind == "escape":
        return draw(st.sampled_from([r"\s+", r"\w*", r"\W", r"\.", r"\'", r"\ "]))
    if kind == "class":
        return draw(st.sampled_from(["[a-c]", "[^ab]", "[]a]", r"[\]b]", "[|(]"])) + draw(QUANTIFIER)
    if kind == "anchor":
        return draw(st.sampled_from([r"\b", r"\B", "^"]))
    inner = "|".join(draw(st.lists(sequences(depth + 1), min_size=1, max_size=3)))
    if kind == "look":
        return draw(st.sampled_from(["(?=", "(?!", "(?<!"])) + inner + ")"
    opener = draw(st.sampled_from(["(?:", "(?:", "(", "(?P<g>", "(?i:"]))
    return opener + inner + ")" + draw(QUANTIFIER)


@st.composite
def sequences(draw, depth: int = 0) -> str:
    parts = draw(st.lists(atoms(depth), min_size=1, max_size=4))
    return "".join(p + (draw(QUANTIFIER) if p and p[-1] not in ")+*?}" else "") for p in parts)


@st.composite
def patterns(draw) -> str:
    pattern = "|".join(draw(st.lists(sequences(), min_size=1, max_size=3)))
    if draw(st.booleans()):
        pattern = draw(st.sampled_from([r"\b", "(?i)", "(?x)"])) + pattern
    try:
        re.compile(pattern)
    except re.error:
        pattern = re.escape(pattern)
    return pattern


def holds_one(literals: frozenset[str] | None, text: str) -> bool:
    return literals is None or any(literal in text for literal in literals)


@settings(max_examples=600, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(patterns(), st.data())
def test_every_text_a_generated_pattern_matches_holds_a_literal(pattern, data):
    literals = required_literals(pattern)
    text = data.draw(st.from_regex(re.compile(pattern)), label="text")
    assert re.search(pattern, text)
    assert holds_one(literals, text), (pattern, literals, text)


@settings(max_examples=500)
@given(patterns(), st.lists(st.text(alphabet="abcdeABC' \n.", max_size=12), min_size=1, max_size=8))
def test_random_texts_that_a_pattern_finds_hold_a_literal(pattern, texts):
    literals = required_literals(pattern)
    for text in texts:
        if re.search(pattern, text):
            assert holds_one(literals, text), (pattern, literals, text)


LEXICON = load_lexicon(DEFAULT_LEXICON)
SHIPPED = LEXICON.every_pattern()


def test_almost_every_shipped_pattern_names_its_literals():
    known = [p for p in SHIPPED if p.needs is not None]
    assert len(known) >= 0.95 * len(SHIPPED)


@settings(max_examples=600, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_texts_made_to_match_a_shipped_pattern_hold_one_of_its_literals(data):
    pattern = data.draw(st.sampled_from([p for p in SHIPPED if p.needs is not None]), label="pattern")
    text = data.draw(st.from_regex(pattern.regex), label="text")
    assert pattern.regex.search(text)
    assert pattern.may_match(text), (pattern.pattern[:120], text)


@pytest.mark.parametrize("pattern, literals", [
    (r"\bkill(?:s|ed|ing)?\s+x", {"kill"}),
    (r"guards?", {"guard"}),
    (r"ab+c", {"ab"}),
    (r"ab{0,2}", {"a"}),
    (r"\b(?:push|shove)\w*\s+x|\bto\s+death\b", {"push", "shove", "to"}),
    (r"(?:ab|cd)+e", {"ab", "cd"}),
    (r"(?:a(?:b|c)|d)x", {"a", "d"}),
    (r"(?:ab)?c", None),
    (r"(?:ab|)c", None),
    (r"(?i)abc", None),
    (r"(?x)a b", None),
    (r"[ab]c", None),
    (r"\sab", None),
    (r"ab|\w", None),
    (r"a?", None),
])
def test_hand_worked_examples(pattern, literals):
    found = required_literals(pattern)
    assert found == (None if literals is None else frozenset(literals))
