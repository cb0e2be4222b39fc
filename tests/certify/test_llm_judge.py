"""The LLM judge: verdicts, missing judgments on failure, criterion, and replay misses that surface."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from tests.committed import CERTIFY
from tests.conftest import ScriptedBackend
from vcrime_audit.backends.base import BackendError
from vcrime_audit.cassette import Cassette, CassetteMiss, RecordingBackend, RecordMode
from vcrime_audit.certify.llm_judge import VERDICT_SCHEMA, LLMJudge, criterion_from_spec
from vcrime_audit.certify.queryfile import JudgeSpec
from vcrime_audit.models import get_model


def judge_with(answer) -> tuple[LLMJudge, ScriptedBackend]:
    backend = ScriptedBackend(answer)
    return LLMJudge(backend, get_model("smollm2-135m"), "the answer says the word"), backend


def run(judge: LLMJudge, records: list) -> object:
    return asyncio.run(judge.judge("What is the word?", "It is OWL.", 11, records))


def test_a_valid_verdict_is_returned_with_one_recorded_call():
    judge, backend = judge_with(lambda r: {"catastrophic": True, "reason": "it says OWL"})
    records: list = []
    verdict = run(judge, records)
    assert verdict.catastrophic is True and verdict.reason == "it says OWL" and verdict.error == ""
    [request] = backend.calls
    assert request.role == "certify_judge" and request.output_schema == VERDICT_SCHEMA
    assert "the answer says the word" in request.messages[0].content
    assert "It is OWL." in request.messages[1].content and request.sampling.seed == 11
    assert [r.ok for r in records] == [True]


@pytest.mark.parametrize("bad", ["yes", {"catastrophic": "maybe", "reason": ""},
                                 {"catastrophic": False, "reason": "x" * 201}])
def test_unusable_answers_give_a_missing_judgment_after_three_recorded_attempts(bad):
    judge, backend = judge_with(lambda r: bad)
    records: list = []
    verdict = run(judge, records)
    assert verdict.catastrophic is None and "after 3 attempt(s)" in verdict.error
    assert [r.attempt for r in records] == [0, 1, 2] and not any(r.ok for r in records)
    assert [c.attempt for c in backend.calls] == [0, 1, 2]


def test_a_backend_failure_is_a_missing_judgment():
    def fail(request):
        raise BackendError("context window exceeded")

    judge, _ = judge_with(fail)
    verdict = run(judge, [])
    assert verdict.catastrophic is None and "context window exceeded" in verdict.error


def test_a_replay_miss_is_raised_not_recorded_as_missing(tmp_path):
    recorded = tmp_path / "certify.jsonl.gz"  # a certification's cassette, which lacks this request
    shutil.copyfile(CERTIFY, recorded)
    cassette = Cassette(recorded, RecordMode.none)
    cassette.meta = {"fingerprints": {"smollm2-135m": {"engine": "scripted"}}}
    judge = LLMJudge(RecordingBackend(cassette, None), get_model("smollm2-135m"), "criterion")
    with pytest.raises(CassetteMiss):
        run(judge, [])


def test_the_criterion_comes_from_the_query_file():
    assert criterion_from_spec(JudgeSpec(kind="x", criterion="says OWL")) == "says OWL"
    built = criterion_from_spec(JudgeSpec(kind="secret_leak", secret="BLUE-HERON"))
    assert "'BLUE-HERON'" in built
    with pytest.raises(ValueError, match="needs a criterion"):
        criterion_from_spec(JudgeSpec(kind="x"))
    with pytest.raises(ValueError, match="needs a criterion"):
        criterion_from_spec(None)
