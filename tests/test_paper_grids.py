"""The paper's design as files: the main grid, the two secondary-judge grids, the re-judging plan."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from vcrime_audit.cli import app
from vcrime_audit.followups.plan import load_rejudge_plan
from vcrime_audit.scenario import ScenarioError, list_task_ids
from vcrime_audit.study import grid, load_study

STUDIES = Path(__file__).resolve().parent.parent / "studies"
CASE_STUDIES = {"restaurant__kidnapping", "consulate__riot", "ship__smuggling"}


def _maps(runs):
    return {r.task.split("__")[0] for r in runs}


def test_main_grid_is_8_attackers_by_40_tasks_by_3_seeds():
    paper = load_study(STUDIES / "paper.yaml")
    runs = grid(paper)
    assert len(runs) == 960 and len({r.run_id() for r in runs}) == 960
    assert len(paper.attackers) == len(set(paper.attackers)) == 8
    assert paper.judge == paper.world_manager and paper.judge in paper.attackers


@pytest.mark.parametrize("name, tasks, maps, runs_expected",
                         [("paper-judge-b.yaml", 20, 10, 140), ("paper-judge-c.yaml", 9, 6, 63)])
def test_secondary_judge_grids_have_the_papers_shape(name, tasks, maps, runs_expected):
    paper = load_study(STUDIES / "paper.yaml")
    study = load_study(STUDIES / name)
    runs = grid(study)
    assert len(runs) == runs_expected == 7 * tasks
    assert len(set(study.tasks)) == tasks and set(study.tasks) <= set(list_task_ids())
    assert len(_maps(runs)) == maps and study.seeds == [0]
    assert len(set(study.attackers)) == 7 and set(study.attackers) < set(paper.attackers)
    assert study.judge == study.world_manager and study.judge not in paper.attackers
    assert study.db == paper.db, "one store, so one audit sees every judge"
    assert CASE_STUDIES <= set(study.tasks)
    assert not {r.run_id() for r in runs} & {r.run_id() for r in grid(paper)}


def test_the_smaller_grid_is_inside_the_larger_and_covers_every_goal():
    b, c = (load_study(STUDIES / n) for n in ("paper-judge-b.yaml", "paper-judge-c.yaml"))
    assert set(c.tasks) < set(b.tasks) and c.attackers == b.attackers
    goals = {t.split("__")[1] for t in list_task_ids()}
    assert {t.split("__")[1] for t in b.tasks} == goals and len(goals) == 14


def test_rejudging_plan_is_three_new_judges_over_the_primary_store():
    paper = load_study(STUDIES / "paper.yaml")
    plan = load_rejudge_plan(STUDIES / "paper-rejudge.yaml")
    assert plan.db == paper.db and plan.per_attacker == 50 and len(plan.judges) == 3
    assert paper.judge not in plan.judges
    configs = plan.configs()
    assert [c.judge for c in configs] == plan.judges
    assert {(c.per_attacker, c.seed) for c in configs} == {(50, plan.seed)}, "one sample for all"


def test_a_bad_plan_names_the_file_and_field(tmp_path):
    path = tmp_path / "plan.yaml"
    path.write_text("name: x\ndb: runs/x.sqlite\njudges: [a, a]\n")
    with pytest.raises(ScenarioError) as info:
        load_rejudge_plan(path)
    assert info.value.field == "judges" and "listed twice: a" in str(info.value)
    done = CliRunner().invoke(app, ["rejudge-plan", str(path)])
    assert done.exit_code == 2
    assert done.output.strip().splitlines() == [f"error: {info.value}"]
