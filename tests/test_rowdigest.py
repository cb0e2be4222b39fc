"""Row digests: the fast path writes the digest its definition writes, for any rows."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit.canonical import stdlib_canonical_json
from vcrime_audit.rowdigest import COLUMN_HASH_HEX, first_difference, row_digest, unit_of

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**70),
    st.floats(), st.floats(min_value=-1e-3, max_value=1e-3), st.sampled_from([0.0, -0.0, 1e-05, 3e-07]),
    st.text(), st.sampled_from(["\ud800", "caf\u00e9", "\u2028", 'quote " and \\ slash']))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=6)
rows = st.lists(st.dictionaries(st.sampled_from(["turn", "seq", "text", "score", "extra"]), values,
                                max_size=5), max_size=6)


def defined_digest(tables: dict[str, list[dict]]) -> dict:
    """The definition, from the standard library's canonical JSON and hashlib."""
    columns, units = {}, {}
    for table, table_rows in tables.items():
        names = sorted({c for row in table_rows for c in row})
        columns[table] = names
        grouped: dict[str, list[dict]] = {}
        for index, row in enumerate(table_rows):
            grouped.setdefault(unit_of(row, index), []).append(row)
        units[table] = {
            unit: "".join(hashlib.blake2b(stdlib_canonical_json([r.get(c) for r in group]).encode("utf-8"),
                                          digest_size=4).hexdigest()[:COLUMN_HASH_HEX] for c in names)
            for unit, group in grouped.items()}
    return {"columns": columns, "units": units}


def outcome(make, tables):
    try:
        return make(tables)
    except (ValueError, TypeError) as exc:
        return type(exc)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["turns", "calls", "patches"]), rows, max_size=3))
def test_row_digest_is_its_definition_for_any_rows(tables):
    assert outcome(row_digest, tables) == outcome(defined_digest, tables)


def test_row_digest_names_the_column_that_differs():
    before = {"turns": [{"turn": 1, "score": 0.5, "text": "a"}, {"turn": 2, "score": 1e-05, "text": "b"}]}
    after = {"turns": [{"turn": 1, "score": 0.5, "text": "a"}, {"turn": 2, "score": 2e-05, "text": "b"}]}
    assert row_digest(before) == defined_digest(before)
    assert first_difference(row_digest(before), row_digest(after)) == "table turns, turn 2, column score"


def test_a_value_canonical_json_refuses_is_refused_as_before():
    with pytest.raises(ValueError):
        row_digest({"turns": [{"turn": 1, "score": float("nan")}]})
