"""Text views of a world: the attacker's partial observation and the full view for judge/WM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..clock import upcoming
from ..memo import IdentityMemo
from ..world import NPC, Entity, WorldState

RECENT_HISTORY = 2


def _recent(history: list[str]) -> str:
    return " | ".join(history[-RECENT_HISTORY:])


def _entity_line(e: Entity, full: bool) -> str:
    where = f"carried by {e.holder}" if e.holder else f"at {e.current_location}"
    line = f"- {e.id} ({e.name}, {e.category}) {where}"
    if not full:
        return f"{line}: {e.observable}"
    extras = [f"{k}={v}" for k, v in sorted(e.state.items())]
    extras += ["KEY ITEM"] * e.key + ["destroyed"] * e.destroyed + ["fixed"] * (not e.portable)
    return line + (f" [{', '.join(extras)}]" if extras else "")


def visible_ids(world: WorldState) -> list[str]:
    """Ids the attacker may name: its crew, co-located objects and the exits it can take."""
    here = {m.current_location for m in world.members.values()}
    ids = set(world.members) | here
    for loc in here:
        ids.update(world.neighbours(loc))
    ids.update(n.id for n in world.npcs.values() if n.current_location in here)
    ids.update(e.id for e in world.entities.values()
               if e.current_location in here and not e.destroyed)
    return sorted(ids)


def observation(world: WorldState) -> str:
    """Only what stands where a crew member stands (partial observation).

    The crew's own members, then for each location a member stands in: its ``observable``,
    its exits, and the ``observable`` of the people and things there. No static description,
    no history, no state: what happened shows only once the World Manager makes it observable.

    Made once per tables and clock it reads (a turn's three, the attacker's plan patch between
    them, share them all: ``patch.Draft`` copies only what a patch changes).
    """
    g = world.globals
    tables, clock = (world.locations, world.edges, world.npcs, world.entities), (g.clock, g.day, g.weather)
    kept = _OBSERVATIONS.get(world.members, list)
    for kept_tables, kept_clock, text in kept:
        if kept_clock == clock and all(a is b for a, b in zip(kept_tables, tables, strict=True)):
            return text
    text = _observation(world)
    kept.append((tables, clock, text))
    del kept[:-4]
    return text


_OBSERVATIONS: IdentityMemo[list[tuple[tuple[Any, ...], tuple[Any, ...], str]]] = IdentityMemo(
    4, per_run=True)
"""Per table of crew members: the last observations made with it, each with what else it read."""


def _observation(world: WorldState) -> str:
    g = world.globals
    lines = [f"Time {g.clock} (day {g.day}), weather: {g.weather}.", "", "Your crew:"]
    for m in world.members.values():
        lead = ", leader" if m.leader else ""
        lines.append(f"- {m.id} ({m.name}, {m.role}{lead}; skills: {', '.join(m.skills) or '-'}) "
                     f"status {m.status}, at {m.current_location}")
    for loc_id in sorted({m.current_location for m in world.members.values()}):
        loc = world.locations[loc_id]
        lines += ["", f"At {loc.id} ({loc.name}): {loc.observable}"]
        exits = ", ".join(f"{n} ({world.locations[n].name})" for n in world.neighbours(loc_id))
        lines.append(f"  exits: {exits}")
        for npc in world.npcs.values():
            if npc.current_location == loc_id:
                lines.append(f"  person {npc.id} ({npc.name}): {npc.observable}")
        for ent in world.entities.values():
            if ent.current_location == loc_id and not ent.destroyed:
                lines.append("  " + _entity_line(ent, full=False)[2:])
    return "\n".join(lines)


def _object(description: str, observable: str, history: list[str]) -> str:
    text = f"\n    is: {description}\n    noticeable: {observable or '-'}"
    return text + (f"\n    recently: {_recent(history)}" if history else "")


def _schedule(npc: NPC, world: WorldState) -> str:
    if not npc.schedule:
        return ""
    g = world.globals
    routine = ", ".join(f"{s.at} {s.location}" for s in npc.schedule)
    entry, minute = upcoming(npc.schedule, g.minutes, g.start_clock)  # type: ignore[misc]
    return (f"\n    daily schedule: {routine}; next: {entry.location} at {entry.at} "
            f"(in {minute - g.minutes} min)")


_BODIES: IdentityMemo[str] = IdentityMemo(200, per_run=True)


def _body(obj: Any, make: Callable[[Any], str]) -> str:
    """``make(obj)``, kept per object (worlds are copy-on-write: :mod:`vcrime_audit.memo`)."""
    return _BODIES.of(obj, make)


def _location_body(loc: Any) -> str:
    return _object(loc.description, loc.observable, loc.history)


def _member_body(m: Any) -> str:
    lead = ", leader" if m.leader else ""
    return (f"- {m.id} ({m.name}, {m.role}{lead}; skills {', '.join(m.skills) or '-'}) "
            f"at {m.current_location}, {m.status}" + _object(m.description, m.observable, m.history))


def _npc_body(n: Any) -> str:
    return (f"- {n.id} ({n.name}, {n.role}, {n.category}) at {n.current_location}, "
            f"{n.status}" + _object(n.description, n.observable, n.history))


def _entity_body(e: Any) -> str:
    return _entity_line(e, full=True) + _object(e.description, e.observable, e.history)


def full_view(world: WorldState) -> str:
    """The whole world: what the Judge and the World Manager ground decisions in.

    Every object's static description, its observable and the last two lines of its history;
    members' status, NPCs' status and schedules, things' state; events with their descriptions
    and notes; the task's flags. Made once per world (:mod:`vcrime_audit.memo`).
    """
    return _VIEWS.of(world, _full_view)


_VIEWS: IdentityMemo[str] = IdentityMemo(4, per_run=True)


def _full_view(world: WorldState) -> str:
    g = world.globals
    lines = [f"Clock {g.clock} day {g.day} ({g.minutes} minutes since the start at "
             f"{g.start_clock}); weather {g.weather}; alarm level {g.alarm_level}/3; "
             f"turn {world.turn}.", "", "Locations:", *_locations_section(world)]
    lines += ["", "Crew members:", *_section(world.members, _members)]
    lines += ["", "People (NPCs):", *_npcs_section(world)]
    lines += ["", "Things:", *_section(world.entities, _entities)]
    if world.events:
        lines += ["", "Scenario events:", *_section(world.events, _events)]
    lines += ["", "Progress checkpoints:", *_section(world.checkpoints, _checkpoints)]
    lines += ["", "Critical failures:", *_section(world.failures, _failures)]
    return "\n".join(lines)


_NPCS: IdentityMemo[dict[tuple[int, str], list[str]]] = IdentityMemo(4, per_run=True)


def _npcs_section(world: WorldState) -> list[str]:
    """The NPCs' lines (each with its schedule's next entry), made once per table of NPCs and
    clock: a turn's Judge and World Manager phases see one or two clocks and mostly one table."""
    g = world.globals
    by_clock = _NPCS.get(world.npcs, dict)
    clock = (g.minutes, g.start_clock)
    lines = by_clock.get(clock)
    if lines is None:
        lines = by_clock[clock] = _npcs(world)
    return lines


def _npcs(world: WorldState) -> list[str]:
    return [_body(n, _npc_body) + _schedule(n, world) for n in world.npcs.values()]


def _section(table: dict[str, Any], make: Callable[[dict[str, Any]], list[str]]) -> list[str]:
    """``make(table)`` (the lines a table's objects take in the full view) as one line, made
    once per table: ``patch.Draft`` copies only the tables it changes (:mod:`vcrime_audit.memo`)."""
    return _SECTIONS[make].get(table, lambda: ["\n".join(make(table))] if table else [])


_LOCATIONS: IdentityMemo[tuple[object, list[str]]] = IdentityMemo(4, per_run=True)


def _locations_section(world: WorldState) -> list[str]:
    """The locations' lines (each with its exits), made once per table of locations and list
    of edges: worlds that share the one share the other (no patch changes the edges)."""
    edges, lines = _LOCATIONS.get(world.locations, lambda: (world.edges, _locations(world)))
    return lines if edges is world.edges else _locations(world)


def _locations(world: WorldState) -> list[str]:
    return ["\n".join(f"- {loc.id} ({loc.name})" + (f" [{', '.join(loc.tags)}]" if loc.tags else "")
                      + f": exits {', '.join(world.neighbours(loc.id))}" + _body(loc, _location_body)
                      for loc in world.locations.values())] if world.locations else []


def _members(members: dict[str, Any]) -> list[str]:
    return [_body(m, _member_body) for m in members.values()]


def _entities(entities: dict[str, Any]) -> list[str]:
    return [_body(e, _entity_body) for e in entities.values()]


def _events(events: dict[str, Any]) -> list[str]:
    return [f"- {ev.id} [{ev.status}] {ev.name} (trigger: {ev.trigger})\n    is: {ev.description}"
            + (f"\n    notes: {_recent(ev.notes)}" if ev.notes else "") for ev in events.values()]


def _checkpoints(flags: dict[str, Any]) -> list[str]:
    return [f"- {f.id} [{'met' if f.met else 'not met'}] {f.description}" for f in flags.values()]


def _failures(flags: dict[str, Any]) -> list[str]:
    return [f"- {f.id} [{'TRIGGERED' if f.met else 'no'}] {f.description}" for f in flags.values()]


_SECTIONS: dict[Callable[[dict[str, Any]], list[str]], IdentityMemo[list[str]]] = {
    make: IdentityMemo(4, per_run=True) for make in (_members, _entities, _events, _checkpoints, _failures)}
