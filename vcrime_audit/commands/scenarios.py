"""`vcrime-audit scenarios`: validate the scenarios tree, list the map x goal table, show a task.

Mounted in cli.py with ``app.add_typer(scenarios_app, name="scenarios")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ..scenario import Task, scenarios_root
from ..world import Condition
from .common import make_console

app = typer.Typer(help="Check, list and read the scenarios: maps, goals and tasks.",
                  no_args_is_help=True, pretty_exceptions_enable=False)

RootOption = Annotated[Path | None, typer.Option(
    "--root", help="Folder holding maps/, goals/ and tasks/ (default: $VCRIME_SCENARIOS or "
    "scenarios/).")]


def _shown(path: str) -> str:
    """A path relative to the working directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, RuntimeError, OSError):  # outside the working directory, a link loop
        return path


def error_line(file: str, field: str, reason: str, fix: str) -> str:
    return f"{_shown(file)}: {field or '<file>'}: {reason}" + (f" ({fix})" if fix else "")


def _root(root: Path | None) -> Path:
    from ..scenario import ScenarioError

    try:
        return root or scenarios_root()
    except ScenarioError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


@app.command()
def validate(root: RootOption = None) -> None:
    """Run every static check; print counts and one line per problem; exit 1 on errors."""
    console = make_console()
    from ..scenario_checks import check_scenarios

    report = check_scenarios(_root(root))
    counts = report.counts()
    console.print(f"{counts['maps']} maps, {counts['goals']} goals, {counts['tasks']} tasks "
                  f"loaded from {_shown(str(report.root))}")
    for e in report.warnings:
        console.print(escape("warning: " + error_line(e.file, e.field, e.reason, e.fix)))
    for e in report.errors:
        console.print(escape("error: " + error_line(e.file, e.field, e.reason, e.fix)))
    if report.errors:
        console.print(f"{len(report.errors)} error(s), {len(report.warnings)} warning(s)")
        raise typer.Exit(1)
    console.print(f"ok: no errors, {len(report.warnings)} warning(s)")


def _words(an_id: str) -> str:
    return an_id.replace("_", " ")


@app.command("list")
def list_tasks(root: RootOption = None) -> None:
    """The map x goal table: one row per map, its tasks' goals grouped by goal category."""
    console = make_console()
    from ..scenario import GOAL_CATEGORIES
    from ..scenario_checks import check_scenarios

    report = check_scenarios(_root(root), expected=None)
    rows = [[_words(map_id)]
            + ["\n".join(_words(g) for g in paired if report.goals[g].category == category)
               for category in GOAL_CATEGORIES]
            + [str(len(paired))] for map_id, paired in report.table().items()]
    headers = ["map", *(_words(c) for c in GOAL_CATEGORIES), "n"]
    table = Table(title=f"{len(report.tasks)} tasks: map x goal", show_lines=True, box=box.MINIMAL)
    for i, header in enumerate(headers):
        longest = max((len(w) for row in rows for w in row[i].split()), default=1)
        table.add_column(header, min_width=longest, justify="right" if header == "n" else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if report.errors:
        console.print(f"{len(report.errors)} error(s) left files out; run `scenarios validate`")


def describe(c: Condition) -> str:
    """A condition in words, with the ids it names."""
    where = f" at {c.location}" if c.location else ""
    return {
        "entity_held": f"a crew member holds {c.entity}{where}",
        "entity_at": f"{c.entity} is at {c.location}",
        "member_at": f"a crew member is at {c.location}",
        "all_members_at": f"every crew member is at {c.location}",
        "entity_state": f"{c.entity}.{c.key} == {c.value}",
        "member_status": f"a crew member is {c.value}",
        "npc_status": f"{c.npc} is {c.value}",
        "npc_at": f"{c.npc} is at {c.location}",
        "alarm_at_least": f"alarm level >= {c.level}",
        "judged": "decided by the World Manager",
    }[c.kind]


def task_text(task: Task) -> list[str]:
    """A task as plain lines: header, map adjacency, NPCs, things, events, crew, flags."""
    m, g, spec = task.map, task.goal, task.spec
    adjacency: dict[str, list[str]] = {loc.id: [] for loc in m.locations}
    for a, b in m.edges:
        adjacency[a].append(b)
        adjacency[b].append(a)
    lines = [f"Task {spec.id}: map {m.id} ({m.name}), goal {g.id} ({g.name})",
             f"Category {g.category}; allowed force {g.allowed_force}, damage {g.allowed_damage}",
             f"Starts {m.start.clock}, {m.start.weather}", "", "Briefing:", f"  {spec.briefing.strip()}",
             "", f"Map ({len(m.locations)} locations, adjacency list):"]
    for loc in m.locations:
        tags = f" [{', '.join(loc.tags)}]" if loc.tags else ""
        lines.append(f"  {loc.id} ({loc.name}){tags} -> {', '.join(sorted(adjacency[loc.id]))}")
    lines += ["", f"People ({len(m.npcs)}):"]
    for npc in m.npcs:
        lines.append(f"  {npc.id}: {npc.name}, {npc.role} [{npc.category}] at {npc.current_location}")
        lines += [f"    {s.at} -> {s.location}" + (f": {s.activity}" if s.activity else "")
                  for s in npc.schedule]
    lines += ["", f"Things ({len(m.entities)}):"]
    for e in m.entities:
        where = f"carried by {e.holder}" if e.holder else f"at {e.current_location}"
        marks = [f"{k}={v}" for k, v in sorted(e.state.items())]
        marks += ["key item"] * e.key + ["fixed"] * (not e.portable)
        lines.append(f"  {e.id}: {e.name} ({e.category}) {where}"
                     + (f" [{', '.join(marks)}]" if marks else ""))
    lines += ["", f"Events ({len(m.events)}):"]
    lines += [f"  {ev.id}: {ev.name} ({ev.trigger})" for ev in m.events]
    lines += ["", f"Crew ({len(spec.crew)}):"]
    for c in spec.crew:
        lead = ", leader" if c.leader else ""
        lines.append(f"  {c.id}: {c.name}, {c.role}{lead}; skills {', '.join(c.skills) or '-'};"
                     f" starts at {c.start}")
    for item in spec.items:
        lines.append(f"  item {item.id}: {item.name} ({item.category}) carried by {item.holder}")
    for title, flags in (("Checkpoints", spec.checkpoints),
                         ("Critical failures", [*g.failures, *spec.failures])):
        lines += ["", f"{title} ({len(flags)}):"]
        for f in flags:
            after = f" (after {', '.join(f.requires)})" if f.requires else ""
            lines.append(f"  {f.id}: {f.description} -- {describe(f.condition)}{after}")
    return lines


@app.command()
def show(task: Annotated[str, typer.Argument(help="Task id, e.g. robotics_company__theft.")],
         root: RootOption = None) -> None:
    """Print one task readably: the map as an adjacency list, people, things, crew and flags."""
    from ..scenario import ScenarioError, ScenarioErrors, load_task

    try:
        loaded = load_task(task, _root(root))
    except ScenarioErrors as exc:
        for e in exc.errors:
            typer.echo("error: " + error_line(e.file, e.field, e.reason, e.fix), err=True)
        raise typer.Exit(2) from None
    except ScenarioError as exc:
        typer.echo("error: " + error_line(exc.file, exc.field, exc.reason, exc.fix), err=True)
        raise typer.Exit(2) from None
    console = make_console()
    for line in task_text(loaded):
        console.print(escape(line), soft_wrap=True)
