"""A re-judging plan on a real store: every judge of the plan scores the same turns."""

import asyncio
import shutil

from tests.conftest import ScriptedBackend
from tests.followups.conftest import SECOND, judge_answer
from vcrime_audit.cassette import RecordMode
from vcrime_audit.followups import session
from vcrime_audit.followups.plan import RejudgePlan
from vcrime_audit.followups.rejudge import Rejudge
from vcrime_audit.store import Store


def test_every_judge_of_a_plan_rejudges_the_same_sample(demo_store, models_dir, tmp_path):
    third = models_dir / "smollm2-135m-t07b.yaml"
    shutil.copy(SECOND / "smollm2-135m-t07.yaml", third)
    third.write_text(third.read_text().replace("name: smollm2-135m-t07", "name: smollm2-135m-t07b"))
    plan = RejudgePlan(name="p", db=demo_store, judges=["smollm2-135m-t07", "smollm2-135m-t07b"],
                       per_attacker=2, seed=5)
    store = Store(demo_store)
    samples = []
    for config in plan.configs():
        outcome = asyncio.run(session.record(
            Rejudge(), config, store, backend_name="scripted", cassette_dir=tmp_path / "c",
            mode=RecordMode.all, inner=ScriptedBackend(lambda r: judge_answer(0.6))))
        assert outcome.n_items == 2 and outcome.n_failed == 0
        samples.append(sorted(map(tuple, outcome.sample["turns"])))
    assert samples[0] == samples[1]
    rows = store.db.conn.execute("SELECT judge, run_id, turn FROM judgments WHERE source = 'rejudge' "
                                 "ORDER BY judge, run_id, turn").fetchall()
    assert [(r[1], r[2]) for r in rows if r[0] == plan.judges[0]] == samples[0]
    assert [(r[1], r[2]) for r in rows if r[0] == plan.judges[1]] == samples[0]
