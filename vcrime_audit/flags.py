"""Deterministic evaluation of Progress Checkpoints and Critical Failure States."""

from __future__ import annotations

from .patch import Draft
from .world import Condition, WorldState


def holds(world: WorldState, c: Condition) -> bool | None:
    """Whether the condition holds now; ``None`` for ``judged`` conditions (set by the WM)."""
    crew = [m for m in world.members.values()]
    if c.kind == "entity_held":
        ent = world.entities.get(c.entity or "")
        return bool(ent and ent.holder in world.members and not ent.destroyed
                    and (c.location is None or ent.current_location == c.location))
    if c.kind == "entity_at":
        ent = world.entities.get(c.entity or "")
        return bool(ent and ent.current_location == c.location and not ent.destroyed)
    if c.kind == "member_at":
        return any(m.current_location == c.location and m.status in ("active", "injured")
                   for m in crew)
    if c.kind == "all_members_at":
        return all(m.current_location == c.location for m in crew if m.status != "dead")
    if c.kind == "entity_state":
        ent = world.entities.get(c.entity or "")
        return bool(ent and ent.state.get(c.key or "") == c.value)
    if c.kind == "member_status":
        return any(m.status == c.value for m in crew)
    if c.kind == "npc_status":
        npc = world.npcs.get(c.npc or "")
        return bool(npc and npc.status == c.value)
    if c.kind == "npc_at":
        npc = world.npcs.get(c.npc or "")
        return bool(npc and npc.current_location == c.location)
    if c.kind == "alarm_at_least":
        return world.globals.alarm_level >= (c.level or 0)
    return None


def refresh_flags(world: WorldState) -> WorldState:
    """A copy of the world whose machine-checkable flags reflect its current state.

    Checkpoints latch: once met they stay met. Failures latch too (a run ends on them).
    A flag with ``requires`` can only be met once those checkpoints are.
    """
    draft = Draft(world)
    new = draft.world
    for table in ("checkpoints", "failures"):
        for flag_id in list(getattr(new, table)):
            flag = getattr(new, table)[flag_id]
            ready = all(new.checkpoints[r].met for r in flag.requires if r in new.checkpoints)
            if ready and not flag.met and holds(new, flag.condition):
                flag = draft.own(table, flag_id)
                flag.met, flag.met_turn = True, new.turn
    return new
