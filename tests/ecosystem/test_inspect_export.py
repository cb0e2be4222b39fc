"""`export inspect` writes Inspect eval logs that inspect_ai reads back; every sample and score is
checked against the store by SQL written here (not the exporter's code path)."""

from __future__ import annotations

import sqlite3

import pytest
from typer.testing import CliRunner

from vcrime_audit.cli import app
from vcrime_audit.scenario import DAMAGE_LEVELS, FORCE_LEVELS, load_goal, scenarios_root

inspect_log = pytest.importorskip("inspect_ai.log")


def expected(db):
    """(attacker, judge) -> run id -> (won, mean non-failure, over-harm), straight from SQL."""
    conn = sqlite3.connect(db)
    out: dict = {}
    rows = conn.execute(
        "SELECT r.run_id, r.attacker, r.goal_id, r.status, j.judge, AVG(j.non_failure), COUNT(*) "
        "FROM runs r JOIN judgments j ON j.run_id = r.run_id JOIN turns t ON t.run_id = j.run_id "
        "AND t.turn = j.turn AND t.verb IS NOT NULL WHERE r.status != 'running' "
        "GROUP BY r.run_id, j.judge").fetchall()
    for run_id, attacker, goal_id, status, judge, mean, _ in rows:
        goal = load_goal(scenarios_root() / "goals" / f"{goal_id}.yaml")
        force, damage = conn.execute("SELECT MAX(force), MAX(damage) FROM harm WHERE run_id = ?",
                                     [run_id]).fetchone()
        over = (force or 0) > FORCE_LEVELS.index(goal.allowed_force) or \
            (damage or 0) > DAMAGE_LEVELS.index(goal.allowed_damage)
        out.setdefault((attacker, judge), {})[run_id] = (float(status == "won"), mean, float(over))
    return out, conn


def test_logs_read_back_with_inspect_match_the_store(judged_store, tmp_path):
    out = tmp_path / "logs"
    done = CliRunner().invoke(app, ["export", "inspect", "--db", str(judged_store), "--out", str(out)])
    assert done.exit_code == 0, done.output
    want, conn = expected(judged_store)
    assert len(want) == 2  # the live judge and the re-judging model
    files = sorted(out.glob("*.eval"))
    assert len(files) == len(want)
    seen = set()
    for path in files:
        log = inspect_log.read_eval_log(str(path))
        attacker, judge = log.eval.metadata["attacker"], log.eval.metadata["judge"]
        seen.add((attacker, judge))
        runs = want[(attacker, judge)]
        assert log.status == "success" and sorted(s.id for s in log.samples) == sorted(runs)
        for sample in log.samples:
            won, mean, over = runs[sample.id]
            assert sample.scores["won"].value == won
            assert sample.scores["turn_non_failure"].value == pytest.approx(mean, abs=1e-12)
            assert sample.scores["over_harm"].value == over
            run = conn.execute("SELECT task_id, seed, cassette, turn_rows_hash, initial_world_hash "
                               "FROM runs WHERE run_id = ?", [sample.id]).fetchone()
            meta = sample.metadata
            assert (meta["task"], meta["seed"], meta["cassette"], meta["turn_rows_hash"],
                    meta["initial_world_hash"]) == run
            calls = conn.execute("SELECT model, prompt_tokens, completion_tokens, seconds FROM calls "
                                 "WHERE run_id = ? ORDER BY turn, seq", [sample.id]).fetchall()
            events = [e for e in sample.events if e.event == "model"]
            assert len(events) == len(calls) and meta["cassette_found"]
            for event, (model, prompt, completion, seconds) in zip(events, calls, strict=True):
                assert event.model == model and event.output.time == seconds
                assert (event.output.usage.input_tokens, event.output.usage.output_tokens) == (
                    prompt, completion)
                assert event.input and event.output.completion  # text from the cassette
            turns = conn.execute("SELECT COUNT(*) FROM turns WHERE run_id = ?", [sample.id]).fetchone()[0]
            assert sum(m.role == "user" and m.text.startswith("Turn ") for m in sample.messages) == turns
        metrics = {s.name: s.metrics["mean"].value for s in log.results.scores}
        for i, name in enumerate(("won", "turn_non_failure", "over_harm")):
            assert metrics[name] == pytest.approx(sum(v[i] for v in runs.values()) / len(runs))
    assert seen == set(want)


def test_missing_store_is_one_clear_line(tmp_path):
    done = CliRunner().invoke(app, ["export", "inspect", "--db", str(tmp_path / "nope.sqlite"),
                                    "--out", str(tmp_path)])
    assert done.exit_code == 2 and "nope.sqlite: no store at this path; fix:" in done.output


def test_an_export_stopped_while_writing_leaves_no_log_cut_short(judged_store, tmp_path, monkeypatch):
    """A log is written under a name readers skip and renamed once whole: stopped while writing the
    second log (the file cut to half, as a killed process leaves it), every ``.eval`` in the
    folder reads back."""
    import vcrime_audit.export.inspect_logs as exporter

    write, written = exporter.write_eval_log, []

    def cut_short(log, location, **kwargs):
        write(log, location, **kwargs)
        written.append(location)
        if len(written) == 2:
            data = open(location, "rb").read()
            open(location, "wb").write(data[:len(data) // 2])
            raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(exporter, "write_eval_log", cut_short)
    with pytest.raises(KeyboardInterrupt):
        exporter.export_store(judged_store, tmp_path / "logs")
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(logs) == 1
    for path in logs:
        assert inspect_log.read_eval_log(str(path)).status == "success"
