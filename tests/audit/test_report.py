import asyncio
import json
import math
import statistics
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.committed import DEMO_RUN
from tests.scripts import judge_answer, scripted_episode
from vcrime_audit.audit.figures import HEATMAP_FIGURE, JUDGES_FIGURE, SCATTER_FIGURE
from vcrime_audit.audit.load import load_goals, open_store
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.report import cell, write_report
from vcrime_audit.audit.summary import cell_sources, parse_turn_ranges, summary, turn_ranges
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store
from vcrime_audit.engine import Engine, EpisodeLimits, Roles
from vcrime_audit.store import Store

ROOT = Path(__file__).resolve().parents[2]
R = 200


@pytest.fixture(scope="module")
def synth_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    path = make_synthetic_store(folder / "s.sqlite",
                                SyntheticConfig(attackers=3, tasks=4, seeds=2, judges=3, seed=1))
    result = run_audit(path, n_resamples=R, seed=5)
    return path, result, write_report(result, folder / "out")


def test_report_folder_has_every_table_and_figure(synth_report):
    _, result, files = synth_report
    text = files.report.read_text()
    assert text.startswith("# SYNTHETIC") and "**SYNTHETIC DATA.**" in text
    for heading in ("## Table 1", "### Turn non-failure rate by judge",
                    "### Catastrophic failure on risky turns by judge", "## Pairwise differences",
                    "### Over-harm runs by task and attacker", "## Judge rank agreement",
                    "## Self-preference bias"):
        assert heading in text, heading
    assert f"{R} resamples, seed 5" in text
    for a in result.metrics.attackers:
        assert f"| {a} | {result.metrics.n_runs[a]} | {result.metrics.n_turns[a]} | " \
               f"{cell(result.metrics.non_failure_median[a])} |" in text
    for name in (JUDGES_FIGURE, SCATTER_FIGURE, HEATMAP_FIGURE):
        figure = ElementTree.parse(files.folder / "figures" / name).getroot()
        assert f"](figures/{name})" in text
        assert figure.tag == "{http://www.w3.org/2000/svg}svg"
        assert int(figure.get("width")) > 300 and int(figure.get("height")) > 100


def test_summary_holds_the_numbers_of_the_result(synth_report):
    _, result, files = synth_report
    doc = json.loads(files.summary.read_text())
    m = result.metrics
    assert doc["synthetic"] is True and "SYNTHETIC" in doc["synthetic_note"]
    assert doc["bootstrap"] == {"unit": "task", "resamples": R, "seed": 5, "confidence": 0.95, "tasks": 4}
    for a in m.attackers:
        row = doc["table1"][a]
        assert row["non_failure"]["median"]["estimate"] == m.non_failure_median[a].estimate
        assert row["over_harm"]["low"] == m.over_harm[a].low
        assert row["pass_at_1"]["numerator"] == m.pass_at_1[a].numerator
        for j in m.judges:
            assert row["catastrophic_on_risky"]["by_judge"][j]["high"] == m.catastrophic[j][a].high
    assert len(doc["pairwise"]["team_usage"]) == 3
    assert doc["judge_audit"]["self_preference"]["groups"].keys() == result.judges.groups.keys()


def test_summary_is_deterministic_for_a_store_and_seed(synth_report):
    path, result, _ = synth_report
    again = run_audit(path, n_resamples=R, seed=5)
    assert json.dumps(summary(again)) == json.dumps(summary(result))


def _recompute(conn, key, sources, goals):
    """A lineage cell's number straight from the store rows it names."""
    metric, *rest = key.split("/")
    pairs = [(run, t) for run, turns in sources.items() for t in turns]
    if metric in ("non_failure", "catastrophic", "common_nf", "common_cat"):
        judge = rest[0]
        column = "non_failure" if metric in ("non_failure", "common_nf") else "catastrophic"
        values = [conn.execute(f"SELECT {column} FROM judgments WHERE run_id = ? AND turn = ? AND judge = ?",
                               [run, t, judge]).fetchone()[0] for run, t in pairs]
        return statistics.mean(values) if values else math.nan
    if metric == "team_usage":
        leaders = [conn.execute("SELECT actor_is_leader FROM turns WHERE run_id = ? AND turn = ?",
                                [run, t]).fetchone()[0] for run, t in pairs]
        return 1 - statistics.mean(leaders)
    if metric == "pass_at_1":
        return statistics.mean(conn.execute("SELECT status = 'won' FROM runs WHERE run_id = ?",
                                            [run]).fetchone()[0] for run in sources)
    if metric == "over_harm":
        over = 0
        for run in sources:
            goal = conn.execute("SELECT goal_id FROM runs WHERE run_id = ?", [run]).fetchone()[0]
            force, damage = conn.execute("SELECT MAX(force), MAX(damage) FROM harm WHERE run_id = ?",
                                         [run]).fetchone()
            over += force > goals[goal].force or damage > goals[goal].damage
            assert bool(sources[run]) == (force > goals[goal].force or damage > goals[goal].damage)
        return over / len(sources)
    return None


def test_every_number_traces_back_to_store_rows(synth_report):
    path, result, files = synth_report
    doc = json.loads(files.lineage.read_text())
    conn = open_store(path).db.conn
    goals = load_goals(g for (g,) in conn.execute("SELECT DISTINCT goal_id FROM runs"))
    estimates = {}
    for by_judge in (result.metrics.non_failure, result.metrics.catastrophic):
        estimates.update({e.key: e.estimate for row in by_judge.values() for e in row.values()})
    for metric in ("team_usage", "pass_at_1", "over_harm", "non_failure", "catastrophic"):
        estimates.update({e.key: e.estimate for e in result.metrics.headline(metric).values()})
    estimates.update({k: e.estimate for k, e in result.judges.cells.items()})
    estimates.update({b.estimate.key: b.estimate.estimate for b in result.judges.biases})
    recomputed = {}
    checked = 0
    for key, entry in doc["cells"].items():
        if "derived_from" in entry:
            continue
        value = _recompute(conn, key, cell_sources(doc, key), goals)
        if value is None:
            continue
        recomputed[key] = value
        if key in estimates:
            assert value == pytest.approx(estimates[key], nan_ok=True), key
            checked += 1
    for key, entry in doc["cells"].items():
        parts = entry.get("derived_from")
        if key.startswith(("non_failure/median", "catastrophic/median")):
            expected = statistics.median(recomputed[p] for p in parts if not math.isnan(recomputed[p]))
            assert estimates[key] == pytest.approx(expected), key
            checked += 1
        elif key.startswith("self_preference/") and key.count("/") == 2:
            own, *others = parts
            expected = recomputed[own] - statistics.median(recomputed[p] for p in others)
            assert estimates[key] == pytest.approx(expected), key
            checked += 1
    assert checked > 3 * 3 * 4
    for run, info in doc["runs"].items():
        assert info["harm"]["over_harm"] == result.metrics.harm_runs[run].over_harm
        if info["harm"]["over_harm"]:
            assert info["harm"]["evidence"], run


@pytest.mark.parametrize("turns", [(), (4,), (1, 2, 3), (1, 2, 3, 5, 7, 8), (9, 3, 2, 2)])
def test_turn_ranges_round_trip(turns):
    text = turn_ranges(turns)
    assert parse_turn_ranges(text) == sorted(set(turns))
    assert turn_ranges((1, 2, 3, 5, 7, 8)) == "1-3,5,7-8"


def _spine_store(path, world, backend, model):
    """Two short episodes played by the engine and committed turn by turn through the Store."""
    store = Store(path)
    for seed in (1, 2):
        run_id = f"spine-{seed}"
        store.start_run({"run_id": run_id, "task_id": world.task_id, "map_id": world.map_id,
                         "goal_id": world.goal_id, "seed": seed, "attacker": model.name,
                         "judge": model.name, "world_manager": model.name, "status": "running",
                         "synthetic": 0})
        records = []

        async def on_turn(rec, run_id=run_id, records=records):
            store.commit_turn(run_id, rec, model.name)
            records.append(rec)

        engine = Engine(backend, Roles(model, model, model), EpisodeLimits(max_turns=3, stall_turns=30))
        asyncio.run(engine.run(world, seed, on_turn))
        store.finish_run(run_id, status=records[-1].status, reason=records[-1].reason)
    store.db.conn.close()
    return path


def test_report_on_a_store_made_by_the_engine_and_store(tmp_path, scripted, smollm, demo_world):
    actions = [{"actor": "jo", "verb": "move", "description": "Jo walks to the car park.",
                "targets": ["car_park"], "time_minutes": 5},
               {"actor": "alex", "verb": "wait", "description": "Alex waits by the gate.",
                "targets": [], "time_minutes": 5}]
    judge = judge_answer([("full_success", 0.5), ("partial_success", 0.1),
                          ("catastrophic_failure", 0.0), ("failure_no_consequence", 0.4)], risky=True)
    backend = scripted(scripted_episode(actions, judge))
    path = _spine_store(tmp_path / "spine.sqlite", demo_world, backend, smollm)
    result = run_audit(path, n_resamples=100, seed=0)
    files = write_report(result, tmp_path / "out")
    m = result.metrics
    assert m.attackers == m.judges == ("smollm2-135m",)
    conn = open_store(path).db.conn
    nf, cat = conn.execute("SELECT AVG(non_failure), AVG(catastrophic) FROM judgments "
                           "WHERE risky = 1").fetchone()
    assert m.non_failure_median["smollm2-135m"].estimate == pytest.approx(nf) == pytest.approx(0.6)
    assert m.catastrophic_median["smollm2-135m"].estimate == pytest.approx(cat)
    (leader_share,) = conn.execute("SELECT AVG(actor_is_leader) FROM turns WHERE verb IS NOT NULL").fetchone()
    assert m.team_usage["smollm2-135m"].estimate == pytest.approx(1 - leader_share)
    digest = result.data.lexicon_digest
    (missing,) = conn.execute("SELECT COUNT(*) FROM turns t LEFT JOIN harm h USING (run_id, turn) "
                              "WHERE t.verb IS NOT NULL AND (h.lexicon_digest IS NULL OR "
                              "h.lexicon_digest != ?)", [digest]).fetchone()
    assert missing == 0
    text = files.report.read_text()
    assert "SYNTHETIC" not in text and "needs at least two judges" in text
    assert json.loads(files.summary.read_text())["synthetic"] is False


COMMITTED = [DEMO_RUN]


@pytest.mark.skipif(not COMMITTED, reason="no cassette committed under cassettes/ yet")
def test_report_on_a_replayed_cassette(tmp_path):
    from vcrime_audit.runner import replay

    outcome = asyncio.run(replay(COMMITTED[0], tmp_path / "replay.sqlite"))
    result = run_audit(outcome.store, n_resamples=100, seed=0)
    files = write_report(result, tmp_path / "out")
    assert result.metrics.n_turns[result.metrics.attackers[0]] >= 1
    assert files.report.is_file() and (files.folder / "figures" / JUDGES_FIGURE).is_file()


def test_the_judge_audit_of_a_forked_child_is_the_one_computed_here(synth_report, monkeypatch):
    from vcrime_audit.audit import forked
    from vcrime_audit.audit.summary import summary

    path, result, _ = synth_report
    assert forked.can_fork()  # the synth_report fixture's judge audit came from a child
    monkeypatch.setattr(forked.os, "cpu_count", lambda: 1)
    here = run_audit(path, n_resamples=R, seed=5)
    assert json.dumps(summary(here)) == json.dumps(summary(result))


def test_a_failed_audit_leaves_no_child_running(synth_report, monkeypatch):
    import multiprocessing

    from vcrime_audit.audit import pipeline

    def broken(*args, **kwargs):
        raise RuntimeError("judge audit failed")

    monkeypatch.setattr(pipeline, "judge_audit", broken)
    with pytest.raises(RuntimeError, match="judge audit failed"):
        run_audit(synth_report[0], n_resamples=R, seed=5)
    assert multiprocessing.active_children() == []
