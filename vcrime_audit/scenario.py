"""Load and validate ``scenarios/`` (maps, goals, tasks) into a ``Task`` and its initial world.

Every problem is reported as a :class:`ScenarioError` naming the file, the field path and the
reason, so a broken scenario file never surfaces as a bare traceback.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from .world import (
    NPC,
    ClockTime,
    Condition,
    Entity,
    Flag,
    Globals,
    Id,
    Location,
    Member,
    ScenarioEvent,
    Strict,
    WorldState,
)

FORCE_LEVELS = ("none", "threat", "physical", "armed_serious", "lethal")
DAMAGE_LEVELS = ("none", "minor", "significant", "major", "catastrophic")
GOAL_CATEGORIES = ("personal_harm", "violent_property", "non_violent_property", "public_order")


class ScenarioError(Exception):
    """A scenario file is wrong: which file, which field, why, and what to do."""

    def __init__(self, file: Path | str, field: str, reason: str, fix: str = "") -> None:
        self.file, self.field, self.reason, self.fix = str(file), field, reason, fix
        message = f"{self.file}: {field or '<file>'}: {reason}"
        super().__init__(message + (f" (fix: {fix})" if fix else ""))


class ScenarioErrors(Exception):
    def __init__(self, errors: list[ScenarioError]) -> None:
        self.errors = errors
        super().__init__("\n".join(str(e) for e in errors))


class MapStart(Strict):
    clock: ClockTime = "22:00"
    weather: str = "clear"


class MapSpec(Strict):
    id: Id
    name: str
    description: str
    start: MapStart = Field(default_factory=MapStart)
    locations: list[Location]
    edges: list[tuple[Id, Id]]
    npcs: list[NPC]
    entities: list[Entity]
    events: list[ScenarioEvent] = Field(default_factory=list)


class FlagSpec(Strict):
    id: Id
    description: str
    condition: Condition
    requires: list[Id] = Field(default_factory=list, description="Checkpoints met before this one.")


class GoalSpec(Strict):
    id: Id
    name: str
    category: Literal[GOAL_CATEGORIES]  # type: ignore[valid-type]
    description: str
    allowed_force: Literal[FORCE_LEVELS]  # type: ignore[valid-type]
    allowed_damage: Literal[DAMAGE_LEVELS]  # type: ignore[valid-type]
    checkpoint_templates: list[str] = Field(description="How tasks with this goal phrase progress.")
    failures: list[FlagSpec] = Field(description="Critical failures every task of this goal has.")
    fits: list[Id] | None = Field(None, description="Ids of the maps this goal fits; omitted: any map.")


class CrewMemberSpec(Strict):
    id: Id
    name: str
    role: str
    description: str
    skills: list[str] = Field(default_factory=list)
    leader: bool = False
    start: Id


class CrewItemSpec(Strict):
    id: Id
    name: str
    category: Literal["item", "device", "access_system", "vehicle", "container"] = "item"
    description: str
    observable: str = ""
    holder: Id
    key: bool = False


class TaskSpec(Strict):
    id: Id
    map: Id
    goal: Id
    briefing: str
    crew: list[CrewMemberSpec] = Field(min_length=1, max_length=4)
    items: list[CrewItemSpec] = Field(default_factory=list, description="What the crew brings.")
    checkpoints: list[FlagSpec] = Field(min_length=1)
    failures: list[FlagSpec] = Field(default_factory=list)


@dataclass(frozen=True)
class Task:
    spec: TaskSpec
    map: MapSpec
    goal: GoalSpec

    @property
    def id(self) -> str:
        return self.spec.id


def scenarios_root() -> Path:
    """``$VCRIME_SCENARIOS`` or the ``scenarios/`` folder beside the package."""
    env = os.environ.get("VCRIME_SCENARIOS")
    root = Path(env) if env else Path(__file__).resolve().parent.parent / "scenarios"
    if not root.is_dir():
        raise ScenarioError(root, "", "scenarios folder not found",
                            "set VCRIME_SCENARIOS to the folder holding maps/, goals/, tasks/")
    return root


def _field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def _read_yaml(path: Path) -> Any:
    """The file's YAML data (parsed once while unchanged: :func:`yamlio.load_yaml_once`)."""
    from .yamlio import load_yaml_once, problem_of

    try:
        return load_yaml_once(path)
    except OSError as exc:
        raise ScenarioError(path, "", f"cannot read file: {exc.strerror or exc}",
                            "check that the file exists and is readable") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, *problem_of(exc)) from None


def parse_file(path: Path, model: type[BaseModel]) -> Any:
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ScenarioError(path, "", f"expected a mapping at the top, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            fix = "remove the field or check its spelling" if err["type"] == "extra_forbidden" else ""
            errors.append(ScenarioError(path, _field_path(err["loc"]), err["msg"], fix))
        raise ScenarioErrors(errors) from None


def check_map(spec: MapSpec, path: Path | str) -> list[ScenarioError]:
    """Cross-references inside a map: ids unique, edges and positions name real locations."""
    errors: list[ScenarioError] = []
    locations = {loc.id for loc in spec.locations}
    seen: dict[str, str] = {}
    for section in ("locations", "npcs", "entities", "events"):
        for i, obj in enumerate(getattr(spec, section)):
            if obj.id in seen:
                errors.append(ScenarioError(path, f"{section}[{i}].id",
                                            f"id '{obj.id}' already used in {seen[obj.id]}",
                                            "give every object a unique id"))
            seen[obj.id] = section
    for i, (a, b) in enumerate(spec.edges):
        for end, name in ((0, a), (1, b)):
            if name not in locations:
                errors.append(ScenarioError(path, f"edges[{i}][{end}]",
                                            f"unknown location '{name}'",
                                            "use an id from locations"))
    holders = {n.id for n in spec.npcs}
    for section in ("npcs", "entities"):
        for i, obj in enumerate(getattr(spec, section)):
            if obj.current_location not in locations:
                errors.append(ScenarioError(path, f"{section}[{i}].current_location",
                                            f"unknown location '{obj.current_location}'",
                                            "use an id from locations"))
    for i, npc in enumerate(spec.npcs):
        for j, entry in enumerate(npc.schedule):
            if entry.location not in locations:
                errors.append(ScenarioError(path, f"npcs[{i}].schedule[{j}].location",
                                            f"unknown location '{entry.location}'"))
    for i, ent in enumerate(spec.entities):
        if ent.holder is not None and ent.holder not in holders:
            errors.append(ScenarioError(path, f"entities[{i}].holder",
                                        f"unknown NPC '{ent.holder}'",
                                        "a map's items can only start with one of its NPCs"))
    return errors


def check_task(task: Task, path: Path | str) -> list[ScenarioError]:
    """Cross-references between a task and its map: crew starts and flag conditions."""
    errors: list[ScenarioError] = []
    locations = {loc.id for loc in task.map.locations}
    crew = {m.id for m in task.spec.crew}
    for i, item in enumerate(task.spec.items):
        if item.holder not in crew:
            errors.append(ScenarioError(path, f"items[{i}].holder", f"unknown crew member '{item.holder}'",
                                        "name a member of this task's crew"))
    known = {
        "entity": {e.id for e in task.map.entities} | {i.id for i in task.spec.items},
        "npc": {n.id for n in task.map.npcs},
        "location": locations,
    }
    map_ids = locations | known["entity"] | known["npc"]
    for i, member in enumerate(task.spec.crew):
        if member.start not in locations:
            errors.append(ScenarioError(path, f"crew[{i}].start", f"unknown location '{member.start}'",
                                        f"use a location of map '{task.map.id}'"))
        if member.id in map_ids:
            errors.append(ScenarioError(path, f"crew[{i}].id",
                                        f"id '{member.id}' is already used in map '{task.map.id}'"))
    leaders = sum(m.leader for m in task.spec.crew)
    if leaders != 1:
        errors.append(ScenarioError(path, "crew", f"exactly one leader is needed, found {leaders}",
                                    "set leader: true on one member"))
    flag_ids: set[str] = set()
    for section in ("checkpoints", "failures"):
        for i, flag in enumerate(getattr(task.spec, section)):
            if flag.id in flag_ids:
                errors.append(ScenarioError(path, f"{section}[{i}].id", f"duplicate id '{flag.id}'"))
            flag_ids.add(flag.id)
            checkpoint_ids = {c.id for c in task.spec.checkpoints}
            for j, req in enumerate(flag.requires):
                if req not in checkpoint_ids:
                    errors.append(ScenarioError(path, f"{section}[{i}].requires[{j}]",
                                                f"unknown checkpoint '{req}'",
                                                "name a checkpoint of this task"))
            for field in ("entity", "npc", "location"):
                ref = getattr(flag.condition, field)
                if ref is not None and ref not in known[field]:
                    errors.append(ScenarioError(
                        path, f"{section}[{i}].condition.{field}", f"unknown {field} '{ref}'",
                        f"use an id of map '{task.map.id}'"))
    return errors


def load_map(path: Path) -> MapSpec:
    spec = parse_file(path, MapSpec)
    errors = check_map(spec, path)
    if errors:
        raise ScenarioErrors(errors)
    return spec


def load_goal(path: Path) -> GoalSpec:
    return parse_file(path, GoalSpec)


def _find(root: Path, folder: str, name: str, what: str, referrer: Path, field: str) -> Path:
    from .ids import IdError, inside

    try:
        path = inside(root / folder, f"{name}.yaml")
    except IdError as exc:
        raise ScenarioError(referrer, field, str(exc)) from None
    if not path.is_file():
        raise ScenarioError(referrer, field, f"{what} '{name}' not found (looked for {path})",
                            f"add {folder}/{name}.yaml or fix the name")
    return path


def load_task(task_id: str, root: Path | None = None) -> Task:
    from .ids import IdError, check_id, inside

    root = root or scenarios_root()
    try:
        path = inside(root / "tasks", f"{check_id(task_id, 'task')}.yaml")
    except IdError as exc:
        raise ScenarioError(root / "tasks", "task", str(exc)) from None
    if not path.is_file():
        available = ", ".join(list_task_ids(root)) or "none"
        raise ScenarioError(path, "", f"no task '{task_id}'", f"pick one of: {available}")
    spec: TaskSpec = parse_file(path, TaskSpec)
    map_spec = load_map(_find(root, "maps", spec.map, "map", path, "map"))
    goal = load_goal(_find(root, "goals", spec.goal, "goal", path, "goal"))
    task = Task(spec=spec, map=map_spec, goal=goal)
    errors = check_task(task, path)
    if errors:
        raise ScenarioErrors(errors)
    return task


def list_task_ids(root: Path | None = None) -> list[str]:
    root = root or scenarios_root()
    return sorted(p.stem for p in (root / "tasks").glob("*.yaml"))


def _flag(spec: FlagSpec) -> Flag:
    return Flag(id=spec.id, description=spec.description, condition=spec.condition,
                requires=spec.requires)


def initial_world(task: Task) -> WorldState:
    """The world at turn 0: map objects, the crew at its starts, the task's flags."""
    m = task.map
    members = {
        c.id: Member(id=c.id, name=c.name, description=c.description, role=c.role,
                     skills=c.skills, leader=c.leader, current_location=c.start,
                     observable=f"{c.name}, {c.role}.")
        for c in task.spec.crew
    }
    starts = {c.id: c.start for c in task.spec.crew}
    items = {
        i.id: Entity(**i.model_dump(), current_location=starts.get(i.holder, m.locations[0].id))
        for i in task.spec.items
    }
    failures = [*task.goal.failures, *task.spec.failures]
    return WorldState(
        task_id=task.id, map_id=m.id, goal_id=task.goal.id, briefing=task.spec.briefing,
        locations={loc.id: loc for loc in m.locations},
        edges=[tuple(sorted(e)) for e in m.edges],
        members=members,
        npcs={n.id: n for n in m.npcs},
        entities={**{e.id: e for e in m.entities}, **items},
        events={e.id: e for e in m.events},
        checkpoints={f.id: _flag(f) for f in task.spec.checkpoints},
        failures={f.id: _flag(f) for f in failures},
        globals=Globals(start_clock=m.start.clock, minutes=0, weather=m.start.weather),
    )
