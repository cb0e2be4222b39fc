"""JudgmentTable's sums and common turns equal a Python loop over the rows, bit for bit: generated
judgments with NaN, signed zeros, huge and tiny rates, repeated rows, runs that are not finished,
judges that scored nothing."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.audit.reference import slow_common_turns, slow_judgment_sums
from vcrime_audit.audit.judgment_table import JudgmentTable
from vcrime_audit.audit.records import JudgmentRow, RunRow

RATES = st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=64),
                  st.sampled_from([0.0, -0.0, 1.0, 0.1, 0.2, 0.7, 5e-324, 1e308]))
ROWS = st.lists(st.tuples(st.sampled_from(["r1", "r2", "r3", "r9"]), st.integers(0, 6),
                          st.sampled_from(["j1", "j2", "j3"]), st.booleans(), RATES, RATES), max_size=60)


def bits(x: float) -> bytes:
    """The float's bytes (so -0.0 differs from 0.0); every NaN alike (a NaN's payload bits depend on
    the order the CPU met NaNs in, and nothing reads them)."""
    return b"nan" if math.isnan(x) else struct.pack("<d", x)


def same(fast: dict, slow: dict) -> None:
    assert fast.keys() == slow.keys()
    for key, (nf, cat, turns, risky_turns) in slow.items():
        got = fast[key]
        assert (bits(got[0]), bits(got[1])) == (bits(nf), bits(cat)), key
        assert (list(got[2]), list(got[3])) == (turns, risky_turns), key


RUNS = [RunRow(r, "t__g", "g", "a", "j1", "won", False) for r in ("r1", "r2", "r3")]  # r9: not finished


@settings(max_examples=300, deadline=None)
@given(ROWS, st.sets(st.sampled_from(["j1", "j2", "j3"]), min_size=1))
def test_sums_and_common_turns_are_the_python_loops(rows, judges):
    judgments = [JudgmentRow(*row) for row in rows]
    table = JudgmentTable.of(judgments)
    finished = table.rows_of_runs({r.run_id for r in RUNS})
    same(table.sums(finished), slow_judgment_sums(RUNS, judgments))
    common = slow_common_turns(judgments, judges)
    assert table.common_turns(judges) == common
    mask, n = table.common_rows(judges)
    assert n == len(common)
    same(table.sums(finished & mask), slow_judgment_sums(RUNS, judgments, common))


def test_a_hand_worked_table():
    rows = [JudgmentRow("r1", 1, "j1", True, 0.5, 0.25), JudgmentRow("r1", 1, "j2", False, 1.0, 0.0),
            JudgmentRow("r1", 2, "j1", False, 0.25, 0.5), JudgmentRow("r9", 1, "j1", True, 1.0, 1.0),
            JudgmentRow("r2", 3, "j2", True, math.nan, 0.5)]
    table = JudgmentTable.of(rows)
    sums = table.sums(table.rows_of_runs({"r1", "r2"}))
    assert sums[("j1", "r1")] == [0.75, 0.25, [1, 2], [1]]
    assert sums[("j2", "r1")] == [1.0, 0.0, [1], []]
    assert math.isnan(sums[("j2", "r2")][0]) and sums[("j2", "r2")][1:] == [0.5, [3], [3]]
    assert ("j1", "r9") not in sums
    assert table.common_turns(["j1", "j2"]) == {("r1", 1)}
    assert table.common_rows(["j1", "j2", "j4"])[1] == 0  # a judge that scored nothing
    empty = JudgmentTable.of([])
    assert empty.sums(empty.rows_of_runs({"r1"})) == {} and empty.common_turns(["j1"]) == set()
