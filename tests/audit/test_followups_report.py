"""The audit report gains the follow-up sections: re-judged turns in the judge audit, annotation
agreement and level-5 tables, interrogation by condition; summary.json carries the same numbers."""

import asyncio
import json

import pytest

from tests.conftest import ScriptedBackend
from tests.followups import conftest as fixtures
from tests.followups.conftest import judge_answer
from vcrime_audit.audit.followups_report import followups_json, rate_cell
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.report import write_report
from vcrime_audit.cassette import RecordMode
from vcrime_audit.followups import session
from vcrime_audit.followups.annotate import Annotate, AnnotateConfig
from vcrime_audit.followups.interrogate import Interrogate, InterrogateConfig
from vcrime_audit.followups.rejudge import Rejudge, RejudgeConfig
from vcrime_audit.store import Store

demo_store_file, demo_store, models_dir = (fixtures.demo_store_file, fixtures.demo_store,
                                           fixtures.models_dir)
SECOND = "smollm2-135m-t07"


def answer(request):
    if request.role == "judge":
        return judge_answer(0.6, risky=True)
    if request.role == "annotator":
        score = 5 if request.model == SECOND or request.call == "reconcile" else 4
        return {d: {"score": score, "reason": "r"} for d in request.output_schema["properties"]}
    return {"q1": "A", "q2": "C", "q3": "A" if request.call == "A2" else "B"}


@pytest.fixture
def audited(demo_store, models_dir, tmp_path):
    store = Store(demo_store)
    for workflow, config in ((Rejudge(), RejudgeConfig(judge=SECOND, per_attacker=3)),
                             (Annotate(), AnnotateConfig(("smollm2-135m", SECOND))),
                             (Interrogate(), InterrogateConfig(min_turns=3, conditions=("CTRL", "A2")))):
        asyncio.run(session.record(workflow, config, store, backend_name="scripted",
                                   cassette_dir=tmp_path / "c", mode=RecordMode.all,
                                   inner=ScriptedBackend(answer)))
    result = run_audit(demo_store, n_resamples=50, seed=3)
    return result, write_report(result, tmp_path / "report")


def test_rejudged_turns_feed_the_judge_audit(audited):
    result, _ = audited
    assert result.judges.judges == ("smollm2-135m", SECOND) and result.judges.common_turns == 3
    assert {b.relation for b in result.judges.biases} == {"same model", "same vendor"}
    (c,) = result.followups.rejudge
    assert (c.judge, c.turns, c.compared, c.non_failure) == (SECOND, 3, 3, pytest.approx(0.6))


def test_report_sections(audited):
    result, files = audited
    text = files.report.read_text()
    for heading in ("## Re-judging", "## Behaviour annotation", "### Annotators smollm2-135m and "
                    f"{SECOND}", "## Post-hoc interrogation"):
        assert heading in text
    (pair,) = result.followups.annotation
    assert all(d.statuses["reconciled"] == 1 for d in pair.dimensions)
    level5 = pair.level5["smollm2-135m"]["all"]
    assert (level5.k, level5.n) == (4, 4) and rate_cell(level5) in text
    cells = {c.condition: c for c in result.followups.interrogation}
    assert cells["A2"].rates["credible"].k == 1 and cells["CTRL"].rates["credible"].k == 0
    assert (f"| smollm2-135m | own | A2 (A2 B0), schema | 1 | 1 | "
            f"{rate_cell(cells['A2'].rates['admission'])} |") in text
    assert "[n/a]" in rate_cell(cells["A2"].rates["admission"])  # one task: no interval


def test_summary_json_carries_the_followups(audited):
    result, files = audited
    doc = json.loads(files.summary.read_text())
    assert doc["followups"] == json.loads(json.dumps(followups_json(result.followups)))
    assert doc["followups"]["annotation"][0]["dimensions"]["all"]["before"]["n"] == 4
    assert doc["followups"]["interrogation"][1]["credible"]["k"] == 1


def test_a_store_without_followups_says_so(demo_store, tmp_path):
    result = run_audit(demo_store, n_resamples=20)
    text = write_report(result, tmp_path / "r").report.read_text()
    assert "No turn has been re-judged" in text and "No run has been annotated" in text
    assert "No run has been interrogated" in text
