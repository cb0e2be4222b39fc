"""The re-judging pairs built from the judgments read once (followups_load.rejudged_turns) against
the SQL LEFT JOIN they replace, on generated tables in a real SQLite file: NULL keys, several live
judges of one turn, values of every storage class, rows of unfinished runs."""

from collections import Counter

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vcrime_audit.audit.followups_load import RejudgedTurn, rejudged_turns
from vcrime_audit.audit.load import read_judgments
from vcrime_audit.store import Store

JOIN = ("SELECT j.run_id, j.turn, j.judge, l.judge, l.non_failure, l.risky, j.non_failure, j.risky "
        "FROM judgments j LEFT JOIN judgments l ON l.run_id = j.run_id AND l.turn = j.turn "
        "AND l.source = 'live' WHERE j.source = 'rejudge' ORDER BY j.judge, j.run_id, j.turn")
FINISHED = {"r1", "7"}

rows = st.lists(st.tuples(
    st.sampled_from(["r1", "r3", 7, None]),  # 7 is stored as the text '7'; r3 is not finished
    st.sampled_from([1, 2.0, 2.5, "x", None]),  # 2.0 is stored as the integer 2
    st.sampled_from(["a", "B", "é", "", None, 7, b"z"]),
    st.sampled_from(["live", "rejudge", "Live", None]),
    st.one_of(st.none(), st.floats(0, 1)),
    st.sampled_from([0, 1, None, 2])), max_size=30)


def by_sql(store: Store) -> list[RejudgedTurn]:
    """The join as the audit ran it before the judgments were read once."""
    return [RejudgedTurn(r, t, j, lj or "", lnf, None if lr is None else bool(lr), nf, bool(risky))
            for r, t, j, lj, lnf, lr, nf, risky in store.db.conn.execute(JOIN) if r in FINISHED]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows)
@example([("r1", None, "a", "live", 0.5, 1), ("r1", None, "b", "rejudge", 0.5, 1)])
@example([("r1", 1, None, "rejudge", 0.5, 1), ("r1", 1, "B", "rejudge", 0.5, 1),
          ("r1", 1, b"z", "rejudge", 0.5, 1), ("r1", 1, "", "rejudge", 0.5, 1)])
def test_rejudged_turns_equal_the_sql_join(tmp_path_factory, generated):
    store = Store(tmp_path_factory.mktemp("j") / "store.sqlite")
    try:
        store.db.conn.executemany(
            "INSERT OR IGNORE INTO judgments (run_id, turn, judge, source, non_failure, risky) "
            "VALUES (?, ?, ?, ?, ?, ?)", generated)
        store.db.conn.commit()
        want = by_sql(store)
        got = rejudged_turns(read_judgments(store), FINISHED)
        assert [row[:3] for row in got] == [row[:3] for row in want]  # the order, up to ties
        assert Counter(got) == Counter(want)
    finally:
        store.close()


def test_a_turn_with_two_live_judges_pairs_with_both(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    store.db.conn.executemany(
        "INSERT INTO judgments (run_id, turn, judge, source, non_failure, risky) VALUES (?, ?, ?, ?, ?, ?)",
        [("r1", 1, "a", "live", 0.5, 1), ("r1", 1, "b", "live", 0.25, 0), ("r1", 1, "c", "rejudge", 1.0, 0),
         ("r1", 2, "c", "rejudge", 0.0, 1)])
    got = rejudged_turns(read_judgments(store), {"r1"})
    assert got == [RejudgedTurn("r1", 1, "c", "a", 0.5, True, 1.0, False),
                   RejudgedTurn("r1", 1, "c", "b", 0.25, False, 1.0, False),
                   RejudgedTurn("r1", 2, "c", "", None, None, 0.0, True)]
    store.close()
