"""`rejudge`, `annotate`, `interrogate` on a typer app of their own (the lead mounts them in cli.py)."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from tests.conftest import ScriptedBackend
from tests.followups import conftest as fixtures
from tests.followups.conftest import judge_answer
from vcrime_audit.commands.followups import annotate, interrogate, rejudge
from vcrime_audit.store import Store

demo_store_file, demo_store, models_dir = (fixtures.demo_store_file, fixtures.demo_store,
                                           fixtures.models_dir)
runner = CliRunner()
app = typer.Typer()
for command in (rejudge, annotate, interrogate):
    app.command()(command)


@pytest.fixture
def scripted_backend(monkeypatch):
    """`--backend local` served by a script (the registry's backend factory is replaced)."""
    from vcrime_audit.followups import session

    def answer(request):
        if request.role == "judge":
            return judge_answer(0.6)
        if request.role == "annotator":
            return {d: {"score": 2, "reason": "plain"} for d in request.output_schema["properties"]}
        return {"q1": "A", "q2": "C", "q3": "B"}

    monkeypatch.setattr(session, "make_backend", lambda name, entries: ScriptedBackend(answer))


def test_record_then_replay_each_command(demo_store, models_dir, scripted_backend, tmp_path):
    cassettes = tmp_path / "cassettes"
    for args in (["rejudge", "--judge", "smollm2-135m-t07", "--per-attacker", "2"],
                 ["annotate", "--annotators", "smollm2-135m-t07,smollm2-135m"],
                 ["interrogate", "--min-turns", "3", "--conditions", "CTRL,A2B1"]):
        done = runner.invoke(app, [*args, "--db", str(demo_store), "--cassette-dir", str(cassettes)])
        assert done.exit_code == 0, done.output
        assert "to a model, 0 replayed" in done.output
        (cassette,) = cassettes.glob(f"{args[0]}-*.jsonl.gz")
        again = runner.invoke(app, [args[0], "--db", str(demo_store), "--replay", str(cassette)])
        assert again.exit_code == 0, again.output
        assert "calls     0 to a model" in again.output
        assert "identical rows: hash" in again.output
    store = Store(demo_store)
    assert store.db.conn.execute("SELECT COUNT(*) FROM judgments WHERE source = 'rejudge'").fetchone() == (2,)
    assert store.db.conn.execute("SELECT COUNT(*) FROM annotation_results").fetchone() == (4,)
    assert store.db.conn.execute("SELECT COUNT(*) FROM interrogations").fetchone() == (2,)


@pytest.mark.parametrize("args,message", [
    (["rejudge"], "pass --judge MODEL (or --replay CASSETTE)"),
    (["annotate"], "pass --annotators A,B"),
    (["annotate", "--annotators", "a"], "--annotators takes two different model names"),
    (["interrogate", "--conditions", "CTRL,X9"], "unknown condition(s) X9"),
    (["interrogate"], "no finished run has at least 10 executed turns (longest: 3)"),
    (["rejudge", "--judge", "smollm2-135m"], "all 3 attacker turns were judged live by smollm2-135m"),
    (["rejudge", "--judge", "x", "--record-mode", "sometimes"], "--record-mode must be one of"),
    (["rejudge", "--replay", "missing.jsonl.gz"], "no such cassette"),
])
def test_errors_are_one_line_with_the_fix(demo_store, args, message):
    done = runner.invoke(app, [*args, "--db", str(demo_store)])
    assert done.exit_code == 2 and message in done.output, done.output
    assert "Traceback" not in done.output


def test_a_missing_store_is_not_created(tmp_path):
    missing = tmp_path / "none.sqlite"
    done = runner.invoke(app, ["rejudge", "--judge", "x", "--db", str(missing)])
    assert done.exit_code == 2 and "no store at this path" in done.output
    assert not missing.exists()
