"""Row digests: a compact fingerprint of a job's rows that says *where* two versions differ.

A digest keeps, for every table, its columns and, for every unit of rows (a turn, a
conversation, a row), one short hash per column. Comparing the digest a cassette's summary
recorded with the one of a replay names the first differing table, unit and column without
keeping the rows themselves in the cassette.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import orjson

from .canonical import canonical_json, content_hash, written_alike

COLUMN_HASH_HEX = 6
Rows = dict[str, list[dict[str, Any]]]
VOLATILE = {"started_at", "finished_at", "cassette", "writer"}
"""Columns that differ between two writings of the same job (when, from which file, by which
process), left out of :func:`compare_tables`."""


def unit_of(row: dict[str, Any], index: int) -> str:
    """Where a row belongs: its turn, its conversation, or (for other tables) its position."""
    parts = []
    if "run_id" in row:
        parts.append(f"run {row['run_id']}")
    if "turn" in row:
        parts.append(f"turn {row['turn']}")
    elif "idx" in row:
        parts.append(f"conversation {row['idx']}")
    return ", ".join(parts) or f"row {index + 1}"


def column_hash(values: list[Any]) -> str:
    """The definition: the first hex digits of ``content_hash`` of a unit's values of a column."""
    return content_hash(values, 4)[:COLUMN_HASH_HEX]


def _plain_column_hash(values: list[Any]) -> str:
    """:func:`column_hash` of values that :func:`canonical.written_alike` passed: orjson writes a
    list of them as canonical JSON does (``tests/test_rowdigest.py``), so their bytes are hashed
    at once, without the general path's checks (~2 us a column, ~1,000 columns a 30-turn run)."""
    try:
        data = orjson.dumps(values, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, a lone surrogate
        return column_hash(values)
    return hashlib.blake2b(data, digest_size=4).hexdigest()[:COLUMN_HASH_HEX]


def row_digest(tables: Rows) -> dict[str, Any]:
    columns: dict[str, list[str]] = {}
    units: dict[str, dict[str, str]] = {}
    for table, rows in tables.items():
        names = sorted({c for row in rows for c in row})
        columns[table] = names
        grouped: dict[str, list[dict[str, Any]]] = {}
        for index, row in enumerate(rows):
            grouped.setdefault(unit_of(row, index), []).append(row)
        hashed = _plain_column_hash if written_alike(rows) else column_hash
        units[table] = {unit: "".join(hashed([r.get(c) for r in group]) for c in names)
                        for unit, group in grouped.items()}
    return {"columns": columns, "units": units}


def first_difference(recorded: dict[str, Any] | None, actual: dict[str, Any]) -> str:
    """Where ``actual`` first departs from ``recorded``, in words."""
    if not isinstance(recorded, dict) or "units" not in recorded:
        return "the recording keeps no per-row digest"
    for table, units in actual["units"].items():
        before = recorded["units"].get(table)
        if before is None:
            return f"table {table}: not in the recording"
        cols, old_cols = actual["columns"][table], recorded["columns"].get(table, [])
        if cols != old_cols:
            return f"table {table}: columns {sorted(set(cols) ^ set(old_cols))} differ"
        for unit, hashes in units.items():
            if unit not in before:
                return f"table {table}, {unit}: not in the recording"
            if hashes != before[unit]:
                for i, column in enumerate(cols):
                    span = slice(i * COLUMN_HASH_HEX, (i + 1) * COLUMN_HASH_HEX)
                    if hashes[span] != before[unit][span]:
                        return f"table {table}, {unit}, column {column}"
        for unit in before:
            if unit not in units:
                return f"table {table}, {unit}: in the recording, missing now"
    for table in recorded["units"]:
        if table not in actual["units"]:
            return f"table {table}: in the recording, missing now"
    return "rows agree; the run's own fields differ"


def compare_tables(expected: dict[str, list[dict[str, Any]]],
                   actual: dict[str, list[dict[str, Any]]]) -> str:
    """The first table, unit and column where ``actual`` departs from ``expected`` ('' if none)."""
    if all(_tables_agree(rows, actual.get(table, [])) for table, rows in expected.items()):
        return ""
    return _walk_tables(expected, actual)


TableTuples = tuple[list[str], list[tuple[Any, ...]]]
"""A table's columns and its rows' values, in the columns' order."""


def as_dicts(tables: dict[str, TableTuples]) -> dict[str, list[dict[str, Any]]]:
    return {table: _dicts(rows) for table, rows in tables.items()}


def _dicts(table: TableTuples) -> list[dict[str, Any]]:
    columns, rows = table
    return [dict(zip(columns, row, strict=True)) for row in rows]


def compare_table_tuples(expected: dict[str, TableTuples], actual: dict[str, TableTuples]) -> str:
    """:func:`compare_tables` of the tables as dicts (:func:`as_dicts`), without making them
    for a table with the same columns on both sides, none volatile: its rows agree where they
    are equal and written alike (:func:`_written_alike`; then so are the dicts they make: the
    same keys with values of the same canonical JSON). Where a table does not agree, the answer is
    :func:`compare_tables`'s (``tests/test_rowdigest.py`` compares the two answers)."""
    if all(_tuples_agree(rows, actual.get(table)) for table, rows in expected.items()):
        return ""
    return compare_tables(as_dicts(expected), as_dicts(actual))


def _tuples_agree(want: TableTuples, got: TableTuples | None) -> bool:
    """:func:`_tables_agree` of the table as dicts, made only where the columns differ or hold
    a volatile one (a run's row: when and by whom it was written)."""
    if got is None:
        got = ([], [])
    if want[0] != got[0] or not VOLATILE.isdisjoint(want[0]):
        return _tables_agree(_dicts(want), _dicts(got))
    return want[1] == got[1] and all(map(_written_alike, want[1], got[1]))


_FLAT = frozenset({str, int, float, bool, type(None)})


def _written_alike(want: tuple[Any, ...], got: tuple[Any, ...]) -> bool:
    """Whether two equal rows of values as SQLite gives them (text, numbers, NULL) have the same
    canonical JSON: equal values of one type do, but for a float zero's sign (``0.0 == -0.0``)
    and floats that are not finite (canonical JSON has none: the walk raises). Anything else (a
    value of another kind, such as bytes) is for the walk to judge. What comparing orjson's bytes
    of the two said, in less time (:func:`compare_table_tuples` of a c960 run's rows: 1.1 against
    1.9 ms)."""
    types = tuple(map(type, want))
    if types != tuple(map(type, got)) or not _FLAT.issuperset(types):
        return False
    if float not in types:
        return True
    floats = [(a, b) for a, b in zip(want, got, strict=True) if type(a) is float]
    return all(math.isfinite(a) and (a or math.copysign(1, a) == math.copysign(1, b)) for a, b in floats)


def _walk_tables(expected: dict[str, list[dict[str, Any]]],
                 actual: dict[str, list[dict[str, Any]]]) -> str:
    """:func:`compare_tables`, value by value (the definition)."""
    for table, rows in expected.items():
        other = actual.get(table, [])
        for index in range(max(len(rows), len(other))):
            if index >= len(other):
                return f"table {table}, {unit_of(rows[index], index)}: missing in the replay"
            if index >= len(rows):
                return f"table {table}, {unit_of(other[index], index)}: not in the store"
            want, got = rows[index], other[index]
            for column in sorted(set(want) | set(got)):
                if column in VOLATILE:
                    continue
                if not _same(want.get(column), got.get(column)):
                    return f"table {table}, {unit_of(want, index)}, column {column}"
    return ""


def _tables_agree(want: list[dict[str, Any]], got: list[dict[str, Any]]) -> bool:
    """Whether two tables' rows, volatile columns left out, are equal and written alike by
    orjson: then :func:`compare_tables` finds no difference in them, and is not asked (it walks
    every value in Python). Equal values written alike have the same canonical JSON: orjson
    writes ``1`` and ``1.0``, ``0.0`` and ``-0.0``, ``true`` and ``1`` apart, and of the values
    it writes alike (``null``: ``None``, NaN and the infinities) no two differing ones are equal.
    Anything else (rows that differ, keys in another order, what orjson refuses, and a
    non-finite float, which has no canonical JSON: orjson writes it as ``null``, and the walk
    raises) goes to the walk, which has the last word."""
    if len(want) != len(got):
        return False
    want, got = _without_volatile(want), _without_volatile(got)
    if want != got:
        return False
    try:
        written = orjson.dumps(want)
        return written == orjson.dumps(got) and (b"null" not in written or written_alike(want))
    except TypeError:  # orjson.JSONEncodeError: bytes, integers beyond 64 bits, lone surrogates
        return False


def _without_volatile(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without their :data:`VOLATILE` columns (copied only where a row has one)."""
    return [row if VOLATILE.isdisjoint(row) else {k: v for k, v in row.items() if k not in VOLATILE}
            for row in rows]


_EXACT = (str, int, bool, type(None))
"""Types whose ``==`` between values of one type means the same canonical JSON (floats do not:
0.0 == -0.0)."""


def _same(a: Any, b: Any) -> bool:
    if type(a) is type(b) and type(a) in _EXACT:
        return a == b
    return canonical_json(a) == canonical_json(b)
