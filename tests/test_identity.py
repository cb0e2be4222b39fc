"""The replay check every replaying path reports, and its brief form a worker process sends."""

from __future__ import annotations

import pickle

import pytest

from vcrime_audit.identity import DIFFERENT, IDENTICAL, RECORDED, UNVERIFIED, ReplayCheck
from vcrime_audit.rowdigest import row_digest

ROWS = {"turns": [{"turn": 1, "action": "wait"}, {"turn": 2, "action": "move"}]}
CHANGED = {"turns": [{"turn": 1, "action": "wait"}, {"turn": 2, "action": "run"}]}


def check(recorded_rows, actual_rows, recording=False, recorded_hash="h1", actual_hash="h1"):
    recorded = None if recorded_rows is None else {"turn_rows_hash": recorded_hash,
                                                   "rows": row_digest(recorded_rows)}
    actual = row_digest(actual_rows)
    return ReplayCheck("turn_rows_hash", actual_hash, actual, recorded, recording,
                       {"turn_rows_hash": actual_hash, "rows": actual})


@pytest.mark.parametrize("made, state", [
    (lambda: check(ROWS, ROWS), IDENTICAL),
    (lambda: check(None, ROWS, recording=True), RECORDED),
    (lambda: check(None, ROWS), UNVERIFIED),
    (lambda: check(ROWS, CHANGED, actual_hash="h2"), DIFFERENT),
])
def test_the_brief_check_says_what_the_whole_says(made, state):
    whole = made()
    short = whole.brief()
    assert whole.state == short.state == state
    assert (whole.ok, whole.recorded_hash, whole.line("rows")) == (short.ok, short.recorded_hash,
                                                                  short.line("rows"))
    if state == DIFFERENT:
        assert "turn 2" in short.where and short.where == whole.where
    else:
        assert len(pickle.dumps(short)) < len(pickle.dumps(whole))
        assert short.actual_digest == {} and short.summary == {}


def test_a_checks_repr_leaves_out_its_digests_and_summaries():
    """``asyncio.run`` writes its task's repr, the job's outcome in it, twice per run."""
    digest = {"columns": {"turns": ["turn"]}, "units": {"turns": {f"turn {i}": "abcdef" for i in range(999)}}}
    check = ReplayCheck("turn_rows_hash", "a" * 32, digest, {"turn_rows_hash": "a" * 32, "rows": digest},
                        False, {"rows": digest})
    assert check.state == IDENTICAL and len(repr(check)) < 200 and "a" * 32 in repr(check)
