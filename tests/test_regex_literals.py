"""`literal_formula`: every text a pattern matches in holds the formula read from it, and one of
the formula's anchors. Checked on texts hypothesis generates to match, for generated patterns and
for every pattern of the shipped lexicon, and by searching random texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcrime_audit.harm import DEFAULT_LEXICON, load_lexicon
from vcrime_audit.regex_literals import ALL, ANY, anchors, holds, literal_formula, literals

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


def holds_all(formula, text: str) -> bool:
    """:func:`holds` and what it implies: one of the anchors, when the formula names any."""
    found = anchors(formula)
    return holds(formula, text) and (found is None or any(a in text for a in found))


@settings(max_examples=600, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(patterns(), st.data())
def test_every_text_a_generated_pattern_matches_holds_its_formula(pattern, data):
    formula = literal_formula(pattern)
    text = data.draw(st.from_regex(re.compile(pattern), fullmatch=True), label="text")
    assert re.search(pattern, text)
    assert holds_all(formula, text), (pattern, formula, text)


@settings(max_examples=500)
@given(patterns(), st.lists(st.text(alphabet="abcdeABC' \n.", max_size=12), min_size=1, max_size=8))
def test_random_texts_that_a_pattern_finds_hold_its_formula(pattern, texts):
    formula = literal_formula(pattern)
    for text in texts:
        if re.search(pattern, text):
            assert holds_all(formula, text), (pattern, formula, text)


LEXICON = load_lexicon(DEFAULT_LEXICON)
SHIPPED = LEXICON.every_pattern()


def test_every_shipped_pattern_names_anchor_literals():
    assert all(anchors(p.formula) for p in SHIPPED)
    assert min(len(a) for p in SHIPPED for a in anchors(p.formula)) >= 3


@settings(max_examples=600, database=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_texts_made_to_match_a_shipped_pattern_hold_its_formula(data):
    pattern = data.draw(st.sampled_from(SHIPPED), label="pattern")
    text = data.draw(st.from_regex(pattern.regex, fullmatch=True), label="text")
    assert pattern.regex.search(text)
    assert holds_all(pattern.formula, text), (pattern.pattern[:120], text)


@pytest.mark.parametrize("pattern, formula", [
    (r"\bkill(?:s|ed|ing)?\s+x", (ALL, ("kill", "x"))),
    (r"guards?", "guard"),
    (r"ab+c", (ALL, ("ab", "c"))),
    (r"ab{0,2}", "a"),
    (r"\b(?:push|shove)\w*\s+x|\bto\s+death\b", (ANY, ((ALL, ("x", (ANY, ("push", "shove")))),
                                                       (ALL, ("to", "death"))))),
    (r"(?:ab|cd)+e", (ALL, ("e", (ANY, ("ab", "cd"))))),
    (r"(?:a(?:b|c)|d)x", (ALL, ("x", (ANY, ("a", "d"))))),  # the parser makes b|c a class
    (r"\btake|\btie", (ANY, ("take", "tie"))),
    (r"(?P<mask>ab)c", (ALL, ("ab", "c"))),
    (r"a\bb", "ab"),
    (r"(?:ab)?c", "c"),
    (r"(?:ab|)c", "c"),
    (r"(?x)a b", "ab"),
    (r"[ab]c", "c"),
    (r"\sab", "ab"),
    (r"(?i)abc", True),
    (r"(?i:ab)c", "c"),
    (r"ab|\w", True),
    (r"a?", True),
    (r"(?=ab)a", "a"),
])
def test_hand_worked_examples(pattern, formula):
    assert literal_formula(pattern) == formula


def test_anchors_and_literals_of_a_formula():
    formula = literal_formula(r"\b(?:push|shove)\w*\s+xy|\bto\s+death\b")
    assert anchors(formula) == frozenset({"push", "shove", "death"})
    assert sorted(literals(formula)) == ["death", "push", "shove", "to", "xy"]
    assert anchors(True) is None and list(literals(True)) == []


def test_an_invalid_pattern_raises_the_parser_s_error():
    with pytest.raises(re.error):
        literal_formula("kill(unclosed")
