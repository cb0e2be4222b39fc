"""Row digests: the fast path writes the digest its definition writes, for any rows."""

from __future__ import annotations

import copy
import hashlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vcrime_audit.canonical import stdlib_canonical_json
from vcrime_audit.rowdigest import (
    COLUMN_HASH_HEX,
    _walk_tables,
    as_dicts,
    compare_table_tuples,
    compare_tables,
    first_difference,
    row_digest,
    unit_of,
)

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


table_rows = st.lists(st.dictionaries(
    st.sampled_from(["turn", "seq", "text", "score", "extra", "started_at", "writer"]), values,
    max_size=6), max_size=5)
EDITS = ("none", "value", "int as float", "negative zero", "key order", "drop column", "drop row",
         "add row", "volatile")


def edited(data, tables: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """A copy of ``tables`` with one edit, drawn (that may change nothing)."""
    tables = copy.deepcopy(tables)
    edit = data.draw(st.sampled_from(EDITS))
    cells = [(t, i, c) for t, rows in tables.items() for i, row in enumerate(rows) for c in row]
    if edit == "none" or not tables:
        return tables
    table = data.draw(st.sampled_from(sorted(tables)))
    rows = tables[table]
    if edit == "add row":
        rows.append(data.draw(table_rows.filter(bool))[0])
    elif edit == "drop row" and rows:
        del rows[data.draw(st.integers(0, len(rows) - 1))]
    elif edit == "key order" and rows:
        index = data.draw(st.integers(0, len(rows) - 1))
        rows[index] = dict(reversed(list(rows[index].items())))
    elif cells:
        where, index, column = data.draw(st.sampled_from(cells))
        row = tables[where][index]
        value = row[column]
        if edit == "drop column":
            del row[column]
        elif edit == "int as float" and type(value) is int and abs(value) < 2**53:
            row[column] = float(value)
        elif edit == "negative zero" and type(value) is float:
            row[column] = -value
        elif edit == "volatile":
            row["started_at"] = data.draw(scalars)
        elif edit == "value":
            row[column] = data.draw(values)
    return tables


def holds_non_finite(tables) -> bool:
    stack = [tables]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float) and not math.isfinite(value):
            return True
    return False


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_compare_tables_answers_as_its_walk_value_by_value(data):
    """The orjson comparison of whole tables only ever answers "no difference" where the walk
    does; the one exception it documents: equal non-finite floats, where the walk raises."""
    expected = data.draw(st.dictionaries(st.sampled_from(["runs", "turns", "calls"]), table_rows,
                                         max_size=3))
    actual = edited(data, expected)
    fast, walked = outcome(lambda t: compare_tables(*t), (expected, actual)), \
        outcome(lambda t: _walk_tables(*t), (expected, actual))
    if fast != walked:
        assert walked is ValueError and fast == "" and holds_non_finite(expected)


def test_compare_tables_names_a_type_or_sign_that_differs_in_equal_values():
    row = {"run_id": "r", "turn": 1, "draw": 0.0, "n": 1, "ok": True, "started_at": "then"}
    for column, other in (("draw", -0.0), ("n", 1.0), ("ok", 1)):
        changed = {**row, column: other, "started_at": "now"}
        assert changed == row | {"started_at": "now"}  # equal to Python, not the same JSON
        assert compare_tables({"turns": [row]}, {"turns": [changed]}) == \
            f"table turns, run r, turn 1, column {column}"
    assert compare_tables({"turns": [row]}, {"turns": [{**row, "started_at": "now"}]}) == ""


def test_tables_written_alike_are_not_walked(monkeypatch):
    from vcrime_audit import rowdigest

    rows = [{"run_id": "r", "turn": t, "draw": t / 3, "text": "é \" \\", "none": None} for t in range(30)]
    store = {"runs": [{"run_id": "r", "started_at": "then", "writer": "a"}], "turns": rows}
    replayed = {"runs": [{"run_id": "r", "started_at": "now", "writer": "b"}], "turns": copy.deepcopy(rows)}
    monkeypatch.setattr(rowdigest, "_walk_tables", lambda *tables: pytest.fail("walked"))
    assert compare_tables(store, replayed) == ""


sqlite_values = st.one_of(
    st.none(), st.integers(min_value=-2**63, max_value=2**63 - 1),
    st.integers(min_value=2**63, max_value=2**70),
    st.floats(), st.sampled_from([0.0, -0.0, 1.0, 1e-05, float("nan")]), st.text(max_size=6),
    st.sampled_from(["\ud800", "caf\u00e9"]), st.binary(max_size=3))
COLUMNS = ["run_id", "turn", "seq", "text", "score", "started_at", "writer"]


@st.composite
def table_tuples(draw):
    columns = draw(st.lists(st.sampled_from(COLUMNS), unique=True, max_size=4))
    rows = draw(st.lists(st.tuples(*[sqlite_values] * len(columns)), max_size=4))
    return columns, rows


def edited_tuples(data, tables):
    out = {}
    for table, (columns, rows) in tables.items():
        columns, rows = list(columns), list(rows)
        edit = data.draw(st.sampled_from(["none", "none", "drop table", "swap columns", "rename column",
                                          "int as float", "negative zero", "value", "drop row", "add row"]))
        if edit == "drop table":
            continue
        if edit == "swap columns" and len(columns) > 1:
            columns[0], columns[1] = columns[1], columns[0]
            rows = [(r[1], r[0], *r[2:]) for r in rows]
        elif edit == "rename column" and columns:
            columns[0] = data.draw(st.sampled_from([c for c in COLUMNS + ["other"] if c not in columns[1:]]))
        elif edit == "drop row" and rows:
            rows.pop(data.draw(st.integers(0, len(rows) - 1)))
        elif edit == "add row":
            rows.append(data.draw(st.tuples(*[sqlite_values] * len(columns))))
        elif rows and columns:
            at, column = data.draw(st.integers(0, len(rows) - 1)), data.draw(st.integers(0, len(columns) - 1))
            row, value = list(rows[at]), rows[at][column]
            if edit == "int as float" and type(value) is int and abs(value) < 2**53:
                row[column] = float(value)
            elif edit == "negative zero" and type(value) is float:
                row[column] = -value
            elif edit == "value":
                row[column] = data.draw(sqlite_values)
            rows[at] = tuple(row)
        out[table] = (columns, rows)
    return out


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_comparing_tables_as_tuples_answers_as_comparing_them_as_dicts(data):
    """compare_table_tuples skips making dicts only where they would compare alike: its answer
    (or error) is always compare_tables's of the same rows as dicts."""
    expected = data.draw(st.dictionaries(st.sampled_from(["runs", "turns", "calls"]), table_tuples(),
                                         max_size=3))
    actual = edited_tuples(data, expected)
    assert outcome(lambda t: compare_table_tuples(*t), (expected, actual)) == \
        outcome(lambda t: compare_tables(as_dicts(t[0]), as_dicts(t[1])), (expected, actual))


def test_a_non_finite_float_goes_to_the_walk_on_every_path():
    """Found by the test above: a run row beyond 64 bits (walked, as orjson refuses it) beside a
    volatile table holding an infinity alike on both sides. Both paths answer as the walk does,
    which raises: canonical JSON has no infinity."""
    tables = {"runs": (["run_id"], [(2**64,)]), "turns": (["started_at", "run_id"], [(None, float("inf"))])}
    assert outcome(lambda t: compare_table_tuples(*t), (tables, tables)) is ValueError
    assert outcome(lambda t: compare_tables(as_dicts(t[0]), as_dicts(t[1])), (tables, tables)) is ValueError
    volatile_only = {"turns": tables["turns"]}
    assert outcome(lambda t: compare_tables(as_dicts(t[0]), as_dicts(t[1])), (volatile_only, volatile_only)) \
        is ValueError
