"""The shipped lexicon's formula table: fresh, used only when this code made it, never a reading
changed by a stale or broken one."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from vcrime_audit import lexicon_formulas
from vcrime_audit.agents.attacker import Action
from vcrime_audit.harm import DEFAULT_LEXICON, classify, default_lexicon, load_lexicon
from vcrime_audit.lexicon_formulas import TABLE, known_formulas, pattern_key, table_of
from vcrime_audit.regex_literals import ALL, ANY, literal_formula


def _patterns():
    return load_lexicon(DEFAULT_LEXICON, compile_now=False).every_pattern()


def test_the_shipped_table_is_this_codes_and_fresh():
    """Fails when regex_literals.py or the lexicon changed: make the table again with
    ``python scripts/make_lexicon_formulas.py``."""
    shipped = json.loads(TABLE.read_bytes())
    assert shipped == json.loads(json.dumps(table_of(_patterns()))), \
        "stale: run python scripts/make_lexicon_formulas.py"
    known = known_formulas()
    assert known == {pattern_key(p.pattern): literal_formula(p.pattern) for p in _patterns()}


def test_the_default_lexicon_has_the_formulas_as_read_and_its_kinds_are_the_constants():
    def kinds(formula):
        if type(formula) is tuple:
            yield formula[0]
            for part in formula[1]:
                yield from kinds(part)

    for pattern in default_lexicon().every_pattern():
        assert pattern._formula == literal_formula(pattern.pattern)  # noqa: SLF001 -- filled, not read
        assert all(kind is ALL or kind is ANY for kind in kinds(pattern._formula))  # noqa: SLF001


def test_a_table_made_by_other_code_is_not_used(tmp_path, monkeypatch):
    table = json.loads(TABLE.read_bytes())
    for field, value in (("python", "2.7"), ("regex_literals", "0" * 32)):
        other = tmp_path / f"{field}.json"
        other.write_text(json.dumps({**table, "made_by": {**table["made_by"], field: value}}))
        assert known_formulas(other) == {}
    edited = tmp_path / "regex_literals.py"
    edited.write_bytes(Path(lexicon_formulas.regex_literals.__file__).read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(lexicon_formulas.regex_literals, "__file__", str(edited))
    lexicon_formulas.made_by.cache_clear()
    try:
        assert known_formulas() == {}
    finally:
        lexicon_formulas.made_by.cache_clear()


def _fill_from(path: Path):
    lexicon = load_lexicon(DEFAULT_LEXICON, compile_now=False)
    lexicon_formulas.fill(lexicon.every_pattern(), known_formulas(path))
    return lexicon


@pytest.mark.parametrize("seed", range(3))
def test_a_broken_table_gives_every_formula_or_none_and_the_same_readings(tmp_path, seed):
    """Byte flips, cuts and edited formulas (checksum kept): each table is read in full as made,
    or not used; readings of texts the lexicon finds harm in, and of texts it does not, stay."""
    rng = random.Random(seed)
    data = TABLE.read_bytes()
    fresh = {pattern_key(p.pattern): literal_formula(p.pattern) for p in _patterns()}
    texts = ["shoot the guard at the door", "take a photo of the lobby", "smash the display case",
             "walk to the kitchen and wait", "knock out the night porter with a chair"]
    expected = [classify(Action(actor="a", verb="v", description=t, targets=[], time_minutes=5),
                         default_lexicon()) for t in texts]
    assert any(r.evidence for r in expected) and not all(r.evidence for r in expected)
    table = json.loads(data)
    key = next(iter(table["formulas"]))
    broken = [data[:rng.randrange(len(data))],
              *(bytes(b ^ (1 << rng.randrange(8)) if i == at else b for i, b in enumerate(data))
                for at in (rng.randrange(len(data)) for _ in range(8))),
              json.dumps({**table, "formulas": {**table["formulas"], key: "zzz"}}).encode(),
              json.dumps({**table, "formulas": {**table["formulas"], key: ["none", []]}}).encode(),
              json.dumps([table]).encode(), b"", b"\xff\xfe"]
    for i, content in enumerate(broken):
        path = tmp_path / f"{i}.json"
        path.write_bytes(content)
        known = known_formulas(path)
        assert known in ({}, fresh), f"case {i}"
        lexicon = _fill_from(path)
        readings = [classify(Action(actor="a", verb="v", description=t, targets=[], time_minutes=5), lexicon)
                    for t in texts]
        assert readings == expected, f"case {i}"
    shutil.copy(TABLE, tmp_path / "copy.json")
    assert known_formulas(tmp_path / "copy.json") == fresh
    assert known_formulas(tmp_path / "missing.json") == {}
