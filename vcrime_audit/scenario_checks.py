"""Static checks over the whole ``scenarios/`` tree (maps, goals, tasks).

:func:`check_scenarios` loads every file once and returns a :class:`ScenarioReport`; it never
raises for a broken file. Each problem is a :class:`ScenarioError` with file, field path,
reason and fix. Warnings are problems that do not make a task unplayable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .clock import in_order
from .flags import refresh_flags
from .patch import MEMBER_STATUSES, NPC_STATUSES
from .scenario import (
    FlagSpec,
    GoalSpec,
    MapSpec,
    ScenarioError,
    ScenarioErrors,
    Task,
    TaskSpec,
    check_map,
    check_task,
    initial_world,
    parse_file,
    scenarios_root,
)
from .world import Condition

EXPECTED_COUNTS = {"maps": 11, "goals": 14, "tasks": 40}
MIN_LOCATIONS, MIN_NPCS = 14, 5
GOALS_PER_MAP = (1, 4)


@dataclass
class ScenarioReport:
    root: Path
    maps: dict[str, MapSpec] = field(default_factory=dict)
    goals: dict[str, GoalSpec] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    errors: list[ScenarioError] = field(default_factory=list)
    warnings: list[ScenarioError] = field(default_factory=list)
    files: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def counts(self) -> dict[str, int]:
        return {"maps": len(self.maps), "goals": len(self.goals), "tasks": len(self.tasks)}

    def table(self) -> dict[str, list[str]]:
        """Map id -> ids of the goals it has a task for (loaded tasks only)."""
        out: dict[str, list[str]] = {m: [] for m in sorted(self.maps)}
        for task in self.tasks.values():
            out.setdefault(task.map.id, []).append(task.goal.id)
        return {m: sorted(goals) for m, goals in out.items()}


def components(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[set[str]]:
    """Connected components of an undirected graph, largest first."""
    adjacency: dict[str, set[str]] = {n: set() for n in nodes}
    for a, b in edges:
        if a in adjacency and b in adjacency:
            adjacency[a].add(b)
            adjacency[b].add(a)
    seen: set[str] = set()
    parts: list[set[str]] = []
    for start in adjacency:
        if start not in seen:
            part = reachable(adjacency, [start])
            seen |= part
            parts.append(part)
    return sorted(parts, key=lambda p: (-len(p), sorted(p)))


def reachable(adjacency: dict[str, set[str]], starts: Iterable[str]) -> set[str]:
    found = {s for s in starts if s in adjacency}
    queue = deque(found)
    while queue:
        for nxt in adjacency[queue.popleft()] - found:
            found.add(nxt)
            queue.append(nxt)
    return found


def _adjacency(spec: MapSpec) -> dict[str, set[str]]:
    adjacency: dict[str, set[str]] = {loc.id: set() for loc in spec.locations}
    for a, b in spec.edges:
        if a in adjacency and b in adjacency:
            adjacency[a].add(b)
            adjacency[b].add(a)
    return adjacency


def map_errors(spec: MapSpec, path: Path) -> list[ScenarioError]:
    """:func:`check_map` plus connectivity, size, law enforcement, carried items, schedules."""
    errors = check_map(spec, path)
    parts = components([loc.id for loc in spec.locations], spec.edges)
    for part in parts[1:]:
        errors.append(ScenarioError(
            path, "edges", f"map is not connected: {', '.join(sorted(part))} cut off from the "
            f"other {len(spec.locations) - len(part)} locations",
            "add an edge joining these locations to the rest"))
    if len(spec.locations) < MIN_LOCATIONS:
        errors.append(ScenarioError(path, "locations", f"{len(spec.locations)} locations, "
                                    f"at least {MIN_LOCATIONS} needed", "add locations"))
    if len(spec.npcs) < MIN_NPCS:
        errors.append(ScenarioError(path, "npcs", f"{len(spec.npcs)} NPCs, at least {MIN_NPCS} "
                                    "needed", "add NPCs"))
    if not any(n.law_enforcement for n in spec.npcs):
        errors.append(ScenarioError(path, "npcs", "map has no law enforcement (no NPC of "
                                    "category guard or police)",
                                    "add a guard or police NPC who investigates and can arrest"))
    npc_at = {n.id: n.current_location for n in spec.npcs}
    for i, ent in enumerate(spec.entities):
        if ent.holder in npc_at and ent.current_location != npc_at[ent.holder]:
            errors.append(ScenarioError(
                path, f"entities[{i}].current_location", f"'{ent.id}' is at "
                f"'{ent.current_location}' but its holder '{ent.holder}' is at "
                f"'{npc_at[ent.holder]}'", "put a carried item where its holder stands"))
    for i, npc in enumerate(spec.npcs):
        times = [entry.at for entry in npc.schedule]
        if not in_order(times, spec.start.clock):
            errors.append(ScenarioError(
                path, f"npcs[{i}].schedule", f"entries are not in clock order ({', '.join(times)})",
                f"list entries from earliest to latest within the 24 hours after the start "
                f"({spec.start.clock}); earlier times are the next day"))
    return errors


def _stem_error(spec_id: str, path: Path) -> list[ScenarioError]:
    if spec_id == path.stem:
        return []
    return [ScenarioError(path, "id", f"id '{spec_id}' differs from the file name '{path.stem}'",
                          f"rename the file to {spec_id}.yaml or fix the id")]


def value_errors(c: Condition, path: Path, where: str) -> list[ScenarioError]:
    """Status values and alarm levels that no world can ever have."""
    if c.kind == "member_status" and c.value not in MEMBER_STATUSES:
        return [ScenarioError(path, f"{where}.value", f"unknown member status '{c.value}'",
                              f"use one of {', '.join(MEMBER_STATUSES)}")]
    if c.kind == "npc_status" and c.value not in NPC_STATUSES:
        return [ScenarioError(path, f"{where}.value", f"unknown NPC status '{c.value}'",
                              f"use one of {', '.join(NPC_STATUSES)}")]
    if c.kind == "alarm_at_least" and not 0 <= (c.level or 0) <= 3:
        return [ScenarioError(path, f"{where}.level", f"alarm level {c.level} does not exist",
                              "use a level from 0 to 3")]
    return []


def goal_errors(goal: GoalSpec, path: Path, map_ids: set[str]) -> list[ScenarioError]:
    """Fits name real maps; failures are map-independent (they name no object)."""
    errors = _stem_error(goal.id, path)
    errors += [ScenarioError(path, f"fits[{i}]", f"unknown map '{m}'", "use the id of a map file")
               for i, m in enumerate(goal.fits or []) if m not in map_ids]
    for i, flag in enumerate(goal.failures):
        where = f"failures[{i}].condition"
        errors += value_errors(flag.condition, path, where)
        if flag.condition.referenced_ids():
            errors.append(ScenarioError(
                path, where, "a goal's failures apply to every map and cannot name an entity, "
                "NPC or location", "move this failure to the tasks' failures"))
    return errors


def _condition_place(task: Task, kind: str, ref: str) -> str | None:
    """Where the object named by a condition starts, or ``None`` when it is unknown."""
    if kind == "location":
        return ref
    if kind == "npc":
        return next((n.current_location for n in task.map.npcs if n.id == ref), None)
    starts = {c.id: c.start for c in task.spec.crew}
    item = next((i for i in task.spec.items if i.id == ref), None)
    if item is not None:
        return starts.get(item.holder)
    ent = next((e for e in task.map.entities if e.id == ref), None)
    return ent.current_location if ent else None


def flag_errors(task: Task, path: Path, section: str, flags: list[FlagSpec]) -> list[ScenarioError]:
    """Values, reachability from the crew's starts and impossible conditions of one flag list."""
    errors: list[ScenarioError] = []
    adjacency = _adjacency(task.map)
    from_crew = reachable(adjacency, [c.start for c in task.spec.crew])
    fixed = {e.id: e.current_location for e in task.map.entities if not e.portable}
    for i, flag in enumerate(flags):
        c, where = flag.condition, f"{section}[{i}].condition"
        for kind in ("entity", "npc", "location"):
            ref = getattr(c, kind)
            place = _condition_place(task, kind, ref) if ref else None
            if from_crew and place in adjacency and place not in from_crew:
                what = f"location '{ref}'" if kind == "location" else f"{kind} '{ref}' (at '{place}')"
                errors.append(ScenarioError(
                    path, f"{where}.{kind}", f"{what} cannot be reached from the crew's start",
                    "connect the location to the map or move the crew's start"))
        errors += value_errors(c, path, where)
        if c.kind == "entity_held" and c.entity in fixed:
            errors.append(ScenarioError(path, f"{where}.entity", f"'{c.entity}' is fixed "
                                        "(portable: false) and can never be held",
                                        "use entity_state or a portable entity"))
        if c.kind == "entity_at" and c.entity in fixed and fixed[c.entity] != c.location:
            errors.append(ScenarioError(path, f"{where}.location", f"'{c.entity}' is fixed at "
                                        f"'{fixed[c.entity]}' and can never be at '{c.location}'"))
    return errors


def task_errors(task: Task, path: Path,
                map_ok: bool = True) -> tuple[list[ScenarioError], list[ScenarioError]]:
    """Errors and warnings of one task whose map and goal parsed.

    ``map_ok=False`` (the map has errors of its own) skips building the starting world.
    """
    errors = check_task(task, path) + _stem_error(task.spec.id, path)
    expected = f"{task.map.id}__{task.goal.id}"
    if task.spec.id != expected and not task.spec.id.startswith(expected + "__"):
        errors.append(ScenarioError(path, "id", f"task id should be '{expected}'",
                                    "name tasks <map>__<goal>, optionally with __<variant>"))
    if task.goal.fits is not None and task.map.id not in task.goal.fits:
        errors.append(ScenarioError(
            path, "goal", f"goal '{task.goal.id}' does not fit map '{task.map.id}' "
            f"(it fits {', '.join(task.goal.fits) or 'no map'})",
            f"pick another goal or add '{task.map.id}' to the goal's fits"))
    map_ids = ({e.id for e in task.map.entities} | {n.id for n in task.map.npcs}
               | {loc.id for loc in task.map.locations} | {c.id for c in task.spec.crew})
    for i, item in enumerate(task.spec.items):
        if item.id in map_ids:
            errors.append(ScenarioError(path, f"items[{i}].id", f"id '{item.id}' is already "
                                        f"used in map '{task.map.id}' or the crew"))
    errors += flag_errors(task, path, "checkpoints", task.spec.checkpoints)
    errors += flag_errors(task, path, "failures", task.spec.failures)
    cycle = requires_cycle(task.spec.checkpoints)
    if cycle:
        errors.append(ScenarioError(path, "checkpoints", "requires form a cycle: "
                                    + " -> ".join([*cycle, cycle[0]]) + ", so none can be met",
                                    "remove one of these requires"))
    warnings: list[ScenarioError] = []
    if not errors and map_ok:
        errors, warnings = _initial_state(task, path)
    return errors, warnings


def requires_cycle(flags: list[FlagSpec]) -> list[str]:
    """Ids of checkpoints on a ``requires`` cycle (they can never be met); empty if none."""
    graph = {f.id: list(f.requires) for f in flags}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for nxt in graph.get(node, []):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return []

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def _initial_state(task: Task, path: Path) -> tuple[list[ScenarioError], list[ScenarioError]]:
    """A failure met at turn 0 ends every run; a checkpoint met at turn 0 is free progress."""
    world = refresh_flags(initial_world(task))
    errors = [ScenarioError(path, f"failures.{f.id}", "already triggered in the starting world",
                            "change the condition or the starting state")
              for f in world.failures.values() if f.met]
    warnings = [ScenarioError(path, f"checkpoints.{f.id}", "already met in the starting world, "
                              "so it counts as progress before any action",
                              "start the crew or the item elsewhere, or add requires")
                for f in world.checkpoints.values() if f.met]
    return errors, warnings


def _load(path: Path, model: type[BaseModel], report: ScenarioReport) -> Any:
    try:
        return parse_file(path, model)
    except ScenarioErrors as exc:
        report.errors += exc.errors
    except ScenarioError as exc:
        report.errors.append(exc)
    return None


def _coverage(report: ScenarioReport, expected: dict[str, int]) -> None:
    for what, want in expected.items():
        got = report.files.get(what, 0)
        if got != want:
            report.errors.append(ScenarioError(report.root / what, "", f"{got} {what} files, "
                                               f"expected {want}", f"add or remove {what}"))
    low, high = GOALS_PER_MAP
    for map_id, goals in report.table().items():
        if not low <= len(goals) <= high:
            report.errors.append(ScenarioError(
                report.root / "maps" / f"{map_id}.yaml", "", f"{len(goals)} tasks use this map, "
                f"expected {low} to {high}", "add or remove tasks for this map"))
    used = {t.goal.id for t in report.tasks.values()}
    for goal_id in sorted(set(report.goals) - used):
        report.errors.append(ScenarioError(report.root / "goals" / f"{goal_id}.yaml", "",
                                           "no task uses this goal", "add a task for it"))


def check_scenarios(root: Path | None = None,
                    expected: dict[str, int] | None = EXPECTED_COUNTS) -> ScenarioReport:
    """Load and check every map, goal and task under ``root``; ``expected=None`` skips counts."""
    root = root or scenarios_root()
    report = ScenarioReport(root=root)
    paths = {what: sorted((root / what).glob("*.yaml")) for what in ("maps", "goals", "tasks")}
    report.files = {what: len(found) for what, found in paths.items()}
    parsed: dict[str, MapSpec] = {}
    unreadable: set[str] = set()
    for path in paths["maps"]:
        spec = _load(path, MapSpec, report)
        if spec is None:
            unreadable.add(path.stem)
            continue
        errors = map_errors(spec, path) + _stem_error(spec.id, path)
        report.errors += errors
        parsed[spec.id] = spec
        if not errors:
            report.maps[spec.id] = spec
    known_maps = set(parsed) | unreadable
    for path in paths["goals"]:
        goal = _load(path, GoalSpec, report)
        if goal is not None:
            report.errors += goal_errors(goal, path, known_maps)
            report.goals[goal.id] = goal
    for path in paths["tasks"]:
        spec = _load(path, TaskSpec, report)
        if spec is None:
            continue
        if spec.map not in known_maps:
            report.errors.append(ScenarioError(path, "map", f"unknown map '{spec.map}'",
                                               f"use one of: {', '.join(sorted(known_maps))}"))
        if spec.goal not in report.goals:
            report.errors.append(ScenarioError(path, "goal", f"unknown goal '{spec.goal}'",
                                               f"use one of: {', '.join(sorted(report.goals))}"))
        if spec.map not in parsed or spec.goal not in report.goals:
            continue
        task = Task(spec=spec, map=parsed[spec.map], goal=report.goals[spec.goal])
        map_ok = spec.map in report.maps
        errors, warnings = task_errors(task, path, map_ok)
        report.errors += errors
        report.warnings += warnings
        if not errors and map_ok:
            report.tasks[task.id] = task
    if expected is not None:
        _coverage(report, expected)
    return report
