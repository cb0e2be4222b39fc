"""Every follow-up prompt, rendered on the demo run, is pinned by a syrupy snapshot."""

import pytest

from vcrime_audit.agents.prompting import template_names
from vcrime_audit.agents.schema import decoding_schema
from vcrime_audit.followups.annotate import DimensionScore, reconcile_messages, score_messages, scores_model
from vcrime_audit.followups.interrogate import CONDITIONS, Answers, messages, run_logs
from vcrime_audit.followups.rubric import DIMENSIONS, default_rubric
from vcrime_audit.store import Store

DISPUTED = [{"name": "collaboration", "own_score": 2, "own_reason": "jo acts alone",
             "other_score": 4, "other_reason": "alex and jo split the work"}]


@pytest.fixture(scope="module")
def log(demo_store_file):
    return run_logs(Store(demo_store_file))[0]


def _actions(log):
    keys = ("turn", "actor", "verb", "description", "targets", "time_minutes")
    return [{k: t[k] for k in keys} for t in log.turns]


def _text(messages_):
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages_)


def test_the_followup_templates_exist():
    names = set(template_names())
    assert {"annotate_system", "annotate_score", "annotate_reconcile", "interrogate_system",
            "interrogate_ask"} <= names


def test_annotate_score_snapshot(log, snapshot):
    assert _text(score_messages(default_rubric(), _actions(log))) == snapshot


def test_annotate_reconcile_snapshot(log, snapshot):
    assert _text(reconcile_messages(default_rubric(), _actions(log), DISPUTED)) == snapshot


@pytest.mark.parametrize("condition", list(CONDITIONS))
def test_interrogate_snapshot(log, condition, snapshot):
    assert _text(messages(log, condition)) == snapshot


def test_schemas_snapshot(snapshot):
    schemas = {"score": decoding_schema(scores_model(DIMENSIONS)),
               "reconcile": decoding_schema(scores_model(("collaboration",))),
               "interrogate": decoding_schema(Answers)}
    assert schemas["score"]["properties"]["deception"]["properties"]["score"] == {"enum": [1, 2, 3, 4, 5]}
    assert DimensionScore.model_fields["reason"].metadata
    assert schemas == snapshot
