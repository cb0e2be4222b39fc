import shutil
from pathlib import Path

import pytest

from vcrime_audit.scenario import (
    ScenarioError,
    ScenarioErrors,
    initial_world,
    load_task,
    scenarios_root,
)

TASK = "robotics_company__data_theft"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "scenarios"
    for folder in ("maps", "goals", "tasks"):
        (root / folder).mkdir(parents=True)
    src = scenarios_root()
    shutil.copy(src / "maps" / "robotics_company.yaml", root / "maps")
    shutil.copy(src / "goals" / "data_theft.yaml", root / "goals")
    shutil.copy(src / "tasks" / f"{TASK}.yaml", root / "tasks")
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _errors(root: Path) -> list[ScenarioError]:
    with pytest.raises((ScenarioError, ScenarioErrors)) as info:
        load_task(TASK, root)
    exc = info.value
    return exc.errors if isinstance(exc, ScenarioErrors) else [exc]


def test_demo_task_builds_a_world_with_crew_items_and_flags():
    world = initial_world(load_task(TASK))
    assert len(world.locations) == 16 and len(world.npcs) == 7
    assert world.entities["usb_drive"].holder == "jo"
    assert world.entities["usb_drive"].current_location == "street"
    assert set(world.failures) == {"crew_arrested", "crew_dead", "alarm_full"}
    assert world.checkpoints["drive_out"].requires == ["archive_copied"]


def test_yaml_syntax_error_names_file_and_position(tree):
    _edit(tree / "maps" / "robotics_company.yaml", "edges:\n", "edges: [\n")
    [error] = _errors(tree)
    assert error.file.endswith("robotics_company.yaml")
    assert "line" in error.field and "invalid YAML" in error.reason


def test_unknown_location_in_edge(tree):
    _edit(tree / "maps" / "robotics_company.yaml", "  - [street, car_park]", "  - [street, carpark]")
    [error] = _errors(tree)
    assert (error.field, error.reason) == ("edges[0][1]", "unknown location 'carpark'")


def test_wrong_type_and_unknown_field_are_reported_with_paths(tree):
    _edit(tree / "tasks" / f"{TASK}.yaml", "    leader: true", "    leader: maybe\n    mood: calm")
    errors = _errors(tree)
    fields = {e.field: e for e in errors}
    assert "crew[0].leader" in fields and "crew[0].mood" in fields
    assert "remove the field" in fields["crew[0].mood"].fix
    assert all(e.file.endswith(f"{TASK}.yaml") for e in errors)


def test_checkpoint_naming_a_missing_entity(tree):
    _edit(tree / "tasks" / f"{TASK}.yaml", "entity: design_archive", "entity: design_archiv")
    [error] = _errors(tree)
    assert error.field == "checkpoints[1].condition.entity"
    assert "unknown entity 'design_archiv'" in error.reason


def test_condition_missing_its_parameters(tree):
    _edit(tree / "tasks" / f"{TASK}.yaml", "{kind: member_at, location: server_room}",
          "{kind: member_at}")
    [error] = _errors(tree)
    assert error.field == "checkpoints[0].condition"
    assert "needs location" in error.reason


def test_missing_map_file(tree):
    (tree / "maps" / "robotics_company.yaml").unlink()
    [error] = _errors(tree)
    assert error.field == "map" and "not found" in error.reason


def test_unknown_task_lists_the_known_ones(tree):
    with pytest.raises(ScenarioError, match=f"pick one of: {TASK}"):
        load_task("no_such_task", tree)
