"""Text views of a world: the attacker's partial observation and the full view for judge/WM."""

from __future__ import annotations

from ..world import Entity, WorldState

RECENT_HISTORY = 2


def _recent(history: list[str]) -> str:
    return " | ".join(history[-RECENT_HISTORY:])


def _entity_line(e: Entity, full: bool) -> str:
    where = f"carried by {e.holder}" if e.holder else f"at {e.current_location}"
    line = f"- {e.id} ({e.name}, {e.category}) {where}: {e.observable}"
    if full:
        extras = [f"{k}={v}" for k, v in sorted(e.state.items())]
        extras += ["KEY ITEM"] * e.key + ["destroyed"] * e.destroyed + ["fixed"] * (not e.portable)
        line += f" [{', '.join(extras)}]" if extras else ""
    return line


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
    """Only what stands where a crew member stands (partial observation)."""
    g = world.globals
    lines = [f"Time {g.clock} (day {g.day}), weather: {g.weather}.", "", "Your crew:"]
    for m in world.members.values():
        lead = ", leader" if m.leader else ""
        lines.append(f"- {m.id} ({m.name}, {m.role}{lead}; skills: {', '.join(m.skills) or '-'}) "
                     f"status {m.status}, at {m.current_location}")
    for loc_id in sorted({m.current_location for m in world.members.values()}):
        loc = world.locations[loc_id]
        lines += ["", f"At {loc.id} ({loc.name}): {loc.observable}"]
        if loc.history:
            lines.append(f"  recently: {_recent(loc.history)}")
        exits = ", ".join(f"{n} ({world.locations[n].name})" for n in world.neighbours(loc_id))
        lines.append(f"  exits: {exits}")
        for npc in world.npcs.values():
            if npc.current_location == loc_id:
                lines.append(f"  person {npc.id} ({npc.name}): {npc.observable}")
        for ent in world.entities.values():
            if ent.current_location == loc_id and not ent.destroyed:
                lines.append("  " + _entity_line(ent, full=False)[2:])
    return "\n".join(lines)


def full_view(world: WorldState) -> str:
    """The whole world, compact: what the Judge and the World Manager ground decisions in."""
    g = world.globals
    lines = [f"Clock {g.clock} day {g.day}; weather {g.weather}; alarm level {g.alarm_level}/3; "
             f"turn {world.turn}.", "", "Locations (id: exits; what is noticeable):"]
    for loc in world.locations.values():
        recently = f" Recently: {_recent(loc.history)}" if loc.history else ""
        lines.append(f"- {loc.id}: exits {', '.join(world.neighbours(loc.id))}; {loc.observable}{recently}")
    lines += ["", "Crew members:"]
    for m in world.members.values():
        lines.append(f"- {m.id} ({m.name}, {m.role}; skills {', '.join(m.skills) or '-'}) "
                     f"at {m.current_location}, {m.status}"
                     + (f". Recently: {_recent(m.history)}" if m.history else ""))
    lines += ["", "People (NPCs):"]
    for n in world.npcs.values():
        upcoming = next((s for s in n.schedule if s.at > g.clock), None)
        lines.append(f"- {n.id} ({n.role}, {n.category}) at {n.current_location}, {n.status}"
                     + (f"; at {upcoming.at} goes to {upcoming.location}" if upcoming else "")
                     + (f". Recently: {_recent(n.history)}" if n.history else ""))
    lines += ["", "Things:"]
    lines += [_entity_line(e, full=True) for e in world.entities.values()]
    if world.events:
        lines += ["", "Scenario events:"]
        lines += [f"- {e.id} [{e.status}] {e.name} (trigger: {e.trigger})"
                  for e in world.events.values()]
    lines += ["", "Progress checkpoints:"]
    lines += [f"- {f.id} [{'met' if f.met else 'not met'}] {f.description}"
              for f in world.checkpoints.values()]
    lines += ["", "Critical failures:"]
    lines += [f"- {f.id} [{'TRIGGERED' if f.met else 'no'}] {f.description}"
              for f in world.failures.values()]
    return "\n".join(lines)
