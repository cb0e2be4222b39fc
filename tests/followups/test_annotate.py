"""Behaviour annotation: independent scores, one reconciliation round, dropped and missing counted."""

import asyncio
import json

import pytest

from tests.conftest import ScriptedBackend
from vcrime_audit.cassette import RecordMode
from vcrime_audit.followups import session
from vcrime_audit.followups.annotate import (
    AGREED,
    DROPPED,
    MISSING,
    RECONCILED,
    Annotate,
    AnnotateConfig,
    resolve,
)
from vcrime_audit.followups.rubric import DIMENSIONS
from vcrime_audit.store import Store

A, B = "smollm2-135m", "smollm2-135m-t07"


@pytest.mark.parametrize("scores,expected", [
    ((3, 3, None, None), (AGREED, 3)),
    ((2, 4, 3, 3), (RECONCILED, 3)),
    ((2, 4, 2, 4), (DROPPED, None)),
    ((2, 4, 4, 2), (DROPPED, None)),
    ((None, 4, None, None), (MISSING, None)),
    ((2, 4, None, 4), (MISSING, None)),
])
def test_resolve(scores, expected):
    assert resolve(*scores) == expected


def scripted(first_round, second_round, fail=()):
    """Annotator answers per (model, round): round 1 gives every dimension, round 2 the disputed."""
    def answer(request):
        round_ = 1 if request.call == "score" else 2
        if (request.model, round_) in fail:
            return "{broken"
        table = first_round if round_ == 1 else second_round
        dims = request.output_schema["properties"]
        return {d: {"score": table[request.model][d], "reason": f"{request.model} r{round_} {d}"}
                for d in dims}
    return answer


def run(store, answer, tmp_path):
    backend = ScriptedBackend(answer)
    outcome = asyncio.run(session.record(Annotate(), AnnotateConfig((B, A)), store,
                                         backend_name="scripted", cassette_dir=tmp_path / "c",
                                         mode=RecordMode.all, inner=backend))
    return outcome, backend


def _results(store):
    return dict((d, (s, v)) for d, s, v in store.db.conn.execute(
        "SELECT dimension, status, score FROM annotation_results"))


FIRST = {A: {"deception": 2, "collaboration": 3, "anti_forensics": 1, "technical_sophistication": 5},
         B: {"deception": 2, "collaboration": 4, "anti_forensics": 3, "technical_sophistication": 4}}
SECOND = {A: {"collaboration": 4, "anti_forensics": 1, "technical_sophistication": 5},
          B: {"collaboration": 4, "anti_forensics": 2, "technical_sophistication": 5}}


def test_agreed_reconciled_and_dropped(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    outcome, backend = run(store, scripted(FIRST, SECOND), tmp_path)
    assert _results(store) == {"deception": (AGREED, 2), "collaboration": (RECONCILED, 4),
                               "anti_forensics": (DROPPED, None),
                               "technical_sophistication": (RECONCILED, 5)}
    assert outcome.n_failed == 0 and len(backend.calls) == 4
    reconcile = [r for r in backend.calls if r.call == "reconcile"]
    assert {r.model for r in reconcile} == {A, B}
    for request in reconcile:
        assert set(request.output_schema["properties"]) == {"collaboration", "anti_forensics",
                                                            "technical_sophistication"}
        other = B if request.model == A else A
        text, own = request.messages[-1].content, request.model
        theirs = FIRST[other]["anti_forensics"]
        assert f'the other annotator gave {theirs} ("{other} r1 anti_forensics")' in text
        assert f'you gave {FIRST[own]["anti_forensics"]} ("{own} r1 anti_forensics")' in text
    rounds = store.db.conn.execute("SELECT round, COUNT(*) FROM annotations GROUP BY round").fetchall()
    assert rounds == [(1, 8), (2, 6)]
    assert store.db.conn.execute("SELECT DISTINCT annotators FROM annotations").fetchall() == [(f"{A},{B}",)]


def test_annotators_see_only_attacker_actions(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    _, backend = run(store, scripted(FIRST, SECOND), tmp_path)
    turns = store.db.conn.execute("SELECT description, outcome_description FROM turns").fetchall()
    text = "\n".join(m.content for r in backend.calls for m in r.messages)
    for description, outcome in turns:
        assert description in text
        assert f"Outcome: {outcome}" not in text and "physically impossible" not in text.lower()
    for d in DIMENSIONS:
        assert f"({d})" in backend.calls[0].messages[0].content  # the rubric names every dimension


def test_no_disagreement_needs_no_second_round(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    same = {A: FIRST[A], B: FIRST[A]}
    outcome, backend = run(store, scripted(same, {}), tmp_path)
    assert len(backend.calls) == 2 and {s for s, _ in _results(store).values()} == {AGREED}


def test_a_failed_annotator_makes_its_items_missing(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    outcome, backend = run(store, scripted(FIRST, SECOND, fail={(B, 1)}), tmp_path)
    assert outcome.n_failed == 1 and {s for s, _ in _results(store).values()} == {MISSING}
    assert len(backend.calls) == 1 + 3  # A once, B three attempts, no second round
    assert store.db.conn.execute("SELECT DISTINCT annotator FROM annotations").fetchall() == [(A,)]


def test_a_failed_second_round_is_missing_not_dropped(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    run(store, scripted(FIRST, SECOND, fail={(A, 2)}), tmp_path)
    results = _results(store)
    assert results["deception"] == (AGREED, 2)
    disputed = ("collaboration", "anti_forensics", "technical_sophistication")
    assert {results[d][0] for d in disputed} == {MISSING}


def test_replay_reproduces_the_rows(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    outcome, _ = run(store, scripted(FIRST, SECOND), tmp_path)
    rows = store.db.conn.execute("SELECT * FROM annotations ORDER BY 1, 2, 3, 4, 5").fetchall()
    store.db.conn.execute("DELETE FROM annotations")
    store.db.conn.commit()
    again = asyncio.run(session.replay(Annotate(), outcome.cassette, store))
    assert again.identical and again.model_calls == 0
    assert store.db.conn.execute("SELECT * FROM annotations ORDER BY 1, 2, 3, 4, 5").fetchall() == rows
    config = json.loads(store.db.conn.execute("SELECT config FROM followups").fetchone()[0])
    assert config["annotators"] == [A, B]


@pytest.mark.parametrize("names", [("a",), ("a", "a"), ("a", "b", "c"), ("a", "")])
def test_two_different_annotators_are_required(names):
    with pytest.raises(ValueError, match="--annotators takes two different model names"):
        AnnotateConfig(names)
