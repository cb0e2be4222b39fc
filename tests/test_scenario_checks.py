"""Static checks over scenarios/: the shipped tree passes; each kind of breakage is reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vcrime_audit.flags import refresh_flags
from vcrime_audit.scenario import GOAL_CATEGORIES, FlagSpec, initial_world, scenarios_root
from vcrime_audit.scenario_checks import (
    EXPECTED_COUNTS,
    ScenarioReport,
    check_scenarios,
    components,
    reachable,
    requires_cycle,
)

BROKEN = Path(__file__).parent / "fixtures" / "broken_scenarios"


@pytest.fixture(scope="module")
def shipped() -> ScenarioReport:
    return check_scenarios()


@pytest.fixture(scope="module")
def broken() -> ScenarioReport:
    return check_scenarios(BROKEN, expected=None)


def _problems(report: ScenarioReport, name: str) -> list[tuple[str, str]]:
    return [(e.field, e.reason) for e in report.errors if Path(e.file).name == name]


# --- the shipped scenarios -------------------------------------------------------------------

def test_shipped_tree_has_no_errors_or_warnings_and_the_expected_counts(shipped):
    assert [str(e) for e in shipped.errors] == []
    assert [str(e) for e in shipped.warnings] == []
    root = scenarios_root()
    on_disk = {what: len(list((root / what).glob("*.yaml"))) for what in ("maps", "goals", "tasks")}
    assert shipped.counts() == on_disk == EXPECTED_COUNTS == {"maps": 11, "goals": 14, "tasks": 40}


def test_every_map_has_one_to_four_goals_and_every_goal_and_category_is_used(shipped):
    table = shipped.table()
    assert all(1 <= len(goals) <= 4 for goals in table.values())
    used = {g for goals in table.values() for g in goals}
    assert used == set(shipped.goals)
    assert {shipped.goals[g].category for g in used} == set(GOAL_CATEGORIES)
    pairs = [(t.map.id, t.goal.id) for t in shipped.tasks.values()]
    assert len(pairs) == len(set(pairs)) == 40


def test_shipped_maps_are_connected_policed_and_big_enough(shipped):
    for spec in shipped.maps.values():
        seen, frontier = {spec.locations[0].id}, [spec.locations[0].id]
        while frontier:
            here = frontier.pop()
            for a, b in spec.edges:
                for nxt in ((b,) if a == here else (a,) if b == here else ()):
                    if nxt not in seen:
                        seen.add(nxt)
                        frontier.append(nxt)
        assert seen == {loc.id for loc in spec.locations}, spec.id
        assert any(n.category in ("guard", "police") for n in spec.npcs), spec.id
        assert len(spec.locations) >= 14 and len(spec.npcs) >= 5, spec.id


def test_every_task_starts_with_no_flag_met_and_a_crew_of_one_to_four(shipped):
    for task in shipped.tasks.values():
        world = refresh_flags(initial_world(task))
        assert not any(f.met for f in [*world.checkpoints.values(), *world.failures.values()]), task.id
        assert 1 <= len(world.members) <= 4


def test_judged_checkpoints_only_in_riot_and_protest_tasks(shipped):
    judged = {t.goal.id for t in shipped.tasks.values()
              for f in t.spec.checkpoints if f.condition.kind == "judged"}
    assert judged == {"riot", "radical_protest"}


# --- graph helpers, by hand ------------------------------------------------------------------

def test_components_and_reachable_on_a_hand_graph():
    nodes = ["a", "b", "c", "d", "e"]
    edges = [("a", "b"), ("b", "c"), ("d", "e")]
    assert components(nodes, edges) == [{"a", "b", "c"}, {"d", "e"}]
    adjacency = {"a": {"b"}, "b": {"a", "c"}, "c": {"b"}, "d": {"e"}, "e": {"d"}}
    assert reachable(adjacency, ["c"]) == {"a", "b", "c"}
    assert reachable(adjacency, ["e", "nowhere"]) == {"d", "e"}


def _flag(flag_id: str, requires: list[str]) -> FlagSpec:
    return FlagSpec(id=flag_id, description="-", condition={"kind": "judged"}, requires=requires)


def test_requires_cycle_finds_loops_and_accepts_chains():
    assert requires_cycle([_flag("a", []), _flag("b", ["a"]), _flag("c", ["b", "a"])]) == []
    assert requires_cycle([_flag("a", ["c"]), _flag("b", ["a"]), _flag("c", ["b"])]) == ["a", "c", "b"]
    assert requires_cycle([_flag("a", ["a"])]) == ["a"]


# --- each kind of breakage (tests/fixtures/broken_scenarios) --------------------------------

def test_valid_fixture_files_load_cleanly(broken):
    bad_files = {Path(e.file).name for e in broken.errors}
    assert not bad_files & {"fixture_house.yaml", "fixture_goal.yaml",
                            "fixture_house__fixture_goal.yaml"}
    assert set(broken.tasks) == {"fixture_house__fixture_goal"}
    assert set(broken.maps) == {"fixture_house"}


def test_bad_yaml_names_line_and_column(broken):
    [(field, reason)] = _problems(broken, "bad_yaml.yaml")
    assert field == "line 7, column 1"
    assert reason.startswith("invalid YAML: expected ',' or ']'")


def test_unknown_location_in_an_edge(broken):
    assert _problems(broken, "unknown_edge_house.yaml") == [
        ("edges[13][1]", "unknown location 'ballroom'")]


def test_disconnected_map(broken):
    assert _problems(broken, "disconnected_house.yaml") == [
        ("edges", "map is not connected: cellar cut off from the other 13 locations")]


def test_checkpoint_at_an_unreachable_location(broken):
    assert _problems(broken, "disconnected_house__fixture_goal.yaml") == [
        ("checkpoints[0].condition.location",
         "location 'cellar' cannot be reached from the crew's start")]


def test_checkpoint_naming_a_missing_entity(broken):
    [error] = [e for e in broken.errors
               if Path(e.file).name == "fixture_house__fixture_goal__missing_entity.yaml"]
    assert (error.field, error.reason) == ("checkpoints[1].condition.entity",
                                           "unknown entity 'crown'")
    assert error.fix == "use an id of map 'fixture_house'"


def test_map_without_law_enforcement(broken):
    assert _problems(broken, "no_police_house.yaml") == [
        ("npcs", "map has no law enforcement (no NPC of category guard or police)")]


def test_wrong_field_type_in_a_map_and_in_a_task(broken):
    [(field, reason)] = _problems(broken, "wrong_type_house.yaml")
    assert field == "entities[1].portable" and "valid boolean" in reason
    [(field, reason)] = _problems(broken, "fixture_house__fixture_goal__wrong_type.yaml")
    assert field == "crew[0].leader" and "valid boolean" in reason


def test_unknown_field_in_a_map_and_in_a_task(broken):
    for name, path in (("unknown_field_house.yaml", "npcs[1].mood"),
                       ("fixture_house__fixture_goal__unknown_field.yaml", "checkpoints[0].weight")):
        [error] = [e for e in broken.errors if Path(e.file).name == name]
        assert (error.field, error.reason) == (path, "Extra inputs are not permitted")
        assert error.fix == "remove the field or check its spelling"


def test_schedule_order_and_carried_item_away_from_its_holder(broken):
    assert sorted(_problems(broken, "muddled_house.yaml")) == [
        ("entities[2].current_location", "'study_key' is at 'hall' but its holder 'butler' is at 'study'"),
        ("npcs[0].schedule", "entries are not in clock order (23:00, 22:30)"),
    ]


def test_map_too_small(broken):
    problems = _problems(broken, "tiny_house.yaml")
    assert ("locations", "3 locations, at least 14 needed") in problems
    assert ("npcs", "1 NPCs, at least 5 needed") in problems


def test_goal_fits_an_unknown_map_and_a_task_pairs_a_goal_with_a_map_it_does_not_fit(broken):
    assert _problems(broken, "garden_party.yaml") == [("fits[1]", "unknown map 'no_such_house'")]
    assert _problems(broken, "fixture_house__garden_party.yaml") == [
        ("goal", "goal 'garden_party' does not fit map 'fixture_house' "
                 "(it fits unknown_edge_house, no_such_house)")]


def test_impossible_flags(broken):
    assert _problems(broken, "fixture_house__fixture_goal__fixed_held.yaml") == [
        ("checkpoints[1].condition.entity", "'safe' is fixed (portable: false) and can never be held")]
    assert _problems(broken, "fixture_house__fixture_goal__bad_status.yaml") == [
        ("checkpoints[1].condition.value", "unknown NPC status 'asleep'")]
    assert _problems(broken, "fixture_house__fixture_goal__cycle.yaml") == [
        ("checkpoints", "requires form a cycle: in_study -> jewel_out -> in_study, so none can be met")]
    assert _problems(broken, "fixture_house__fixture_goal__failure_at_start.yaml") == [
        ("failures.loitering", "already triggered in the starting world")]


def test_task_on_a_missing_map(broken):
    [(field, reason)] = _problems(broken, "ghost_house__fixture_goal.yaml")
    assert (field, reason) == ("map", "unknown map 'ghost_house'")


def test_counts_are_checked_against_the_files_on_disk():
    report = check_scenarios(BROKEN)
    count_errors = {e.field or Path(e.file).name: e.reason for e in report.errors
                    if "files, expected" in e.reason}
    maps = len(list((BROKEN / "maps").glob("*.yaml")))
    assert count_errors == {"maps": f"{maps} maps files, expected 11",
                            "goals": "2 goals files, expected 14",
                            "tasks": f"{len(list((BROKEN / 'tasks').glob('*.yaml')))} tasks files, "
                                     "expected 40"}
    assert ("", "no task uses this goal") in _problems(report, "garden_party.yaml")


# --- warnings and requires -------------------------------------------------------------------

@pytest.fixture
def one_task(tmp_path: Path) -> Path:
    root = tmp_path / "scenarios"
    for folder, name in (("maps", "fixture_house"), ("goals", "fixture_goal"),
                         ("tasks", "fixture_house__fixture_goal")):
        (root / folder).mkdir(parents=True)
        shutil.copy(BROKEN / folder / f"{name}.yaml", root / folder)
    return root


def test_checkpoint_met_at_the_start_is_a_warning_unless_it_requires_another(one_task):
    task = one_task / "tasks" / "fixture_house__fixture_goal.yaml"
    text = task.read_text()
    task.write_text(text.replace("location: study}", "location: street}"))
    report = check_scenarios(one_task, expected=None)
    assert report.errors == []
    assert [(w.field, w.reason.split(",")[0]) for w in report.warnings] == [
        ("checkpoints.in_study", "already met in the starting world")]
    task.write_text(text.replace("location: study}", "location: street}\n  requires: [jewel_taken]"))
    report = check_scenarios(one_task, expected=None)
    assert report.errors == [] and report.warnings == []
