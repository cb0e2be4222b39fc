"""The World Manager: four phase calls, each answering with patch operations."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..backends.base import Message
from ..clock import due, occurs_between
from ..memo import IdentityMemo
from ..patch import MEMBER_STATUSES as _MEMBER_STATUSES
from ..patch import (
    NPC_STATUSES,
    PHASE_OPS,
    FlagUpdate,
    Move,
    Op,
    SetStatus,
)
from ..world import WorldState
from .attacker import Action
from .prompting import render, system_message
from .render import full_view
from .schema import KeptSchemas, decoding_schema, restrict

MAX_OPS = 3
_OPS = TypeAdapter(list[Op])


class PhaseOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ops: list[dict[str, Any]] = Field(max_length=MAX_OPS)


def parse_ops(output: PhaseOutput) -> list[Any]:
    return _OPS.validate_python(output.ops)


def check_ops(output: PhaseOutput) -> str | None:
    try:
        parse_ops(output)
    except ValueError as exc:
        return f"ops: {str(exc).splitlines()[0]}"
    return None


def _base_enums(world: WorldState) -> dict[str, list[str]]:
    judged = sorted(f.id for f in [*world.checkpoints.values(), *world.failures.values()]
                    if f.condition.kind == "judged")
    return {"entity": sorted(world.entities), "by": sorted([*world.members, *world.npcs]),
            "to": sorted(world.locations), "event": sorted(world.events) or ["none"],
            "flag": judged or ["none"],
            "target": sorted(world.all_ids() - set(world.events) - set(world.checkpoints)
                             - set(world.failures))}


def _id_enums(world: WorldState, op_cls: type, base: dict[str, list[str]] | None = None
              ) -> dict[str, list[str]]:
    enums = dict(base if base is not None else _base_enums(world))
    people = enums["by"]
    if op_cls is Move:
        loose = sorted(e.id for e in world.entities.values() if e.portable and not e.destroyed)
        enums["target"] = people + loose
    if op_cls is SetStatus:
        enums["target"] = people
        enums["status"] = sorted(set(_MEMBER_STATUSES) | set(NPC_STATUSES))
    return enums


def phase_schema(world: WorldState, phase: str) -> dict[str, Any]:
    """The phase's output schema: its operations, with the world's ids as enums. Shared between
    worlds whose :func:`_schema_inputs` are equal (a turn's four phases change objects, rarely
    which exist), so callers must not change it."""
    return _SCHEMAS.get(_schema_inputs(world, phase), lambda: _phase_schema(world, phase))


_SCHEMAS = KeptSchemas(256)


def _schema_inputs(world: WorldState, phase: str) -> tuple[Any, ...]:
    """All that :func:`_phase_schema` reads of the world: the ids of each table, which things
    are loose (portable, not destroyed) and which flags are judged; the last two made once per
    table (worlds are copy-on-write: :mod:`vcrime_audit.memo`), not for each of a turn's four
    phases (~1.5 % of a replay, walking every thing and flag)."""
    return (phase, tuple(world.locations), tuple(world.members), tuple(world.npcs),
            tuple(world.entities), _LOOSE.of(world.entities, _loose),
            tuple(world.events), tuple(world.checkpoints), tuple(world.failures),
            _JUDGED.of(world.checkpoints, _judged)
            + _JUDGED.of(world.failures, _judged))


def _loose(entities: dict[str, Any]) -> tuple[bool, ...]:
    return tuple(e.portable and not e.destroyed for e in entities.values())


def _judged(flags: dict[str, Any]) -> tuple[bool, ...]:
    return tuple(f.condition.kind == "judged" for f in flags.values())


_LOOSE: IdentityMemo[tuple[bool, ...]] = IdentityMemo(4, per_run=True)
_JUDGED: IdentityMemo[tuple[bool, ...]] = IdentityMemo(8, per_run=True)


def _phase_schema(world: WorldState, phase: str) -> dict[str, Any]:
    variants = []
    flags = [*world.checkpoints.values(), *world.failures.values()]
    base = _base_enums(world)
    for op_cls in PHASE_OPS[phase]:
        if op_cls is FlagUpdate and not any(f.condition.kind == "judged" for f in flags):
            continue
        variants.append(restrict(decoding_schema(op_cls), _id_enums(world, op_cls, base)))
    return {"type": "object", "additionalProperties": False, "required": ["ops"],
            "properties": {"ops": {"type": "array", "maxItems": MAX_OPS,
                                   "items": {"anyOf": variants}}}}


def phase_messages(world: WorldState, phase: str, action: Action, outcome: dict[str, Any],
                   earlier: list[str]) -> list[Message]:
    return [system_message("wm_system"),
            Message(role="user", content=render(
                f"wm_{phase}", world=full_view(world), action=action, outcome=outcome,
                earlier=earlier, due_events=due_events(world),
                due_schedule=due_schedule(world, action.time_minutes)))]


def due_schedule(world: WorldState, elapsed: int) -> list[str]:
    """NPC schedule entries whose daily clock time came during the last ``elapsed`` minutes.
    Made once per table of NPCs, clock and ``elapsed`` (a turn's four phases mostly share them),
    so callers must not change the list."""
    g = world.globals
    by_clock = _DUE_SCHEDULES.get(world.npcs, dict)
    key = (g.minutes, g.start_clock, elapsed)
    due_entries = by_clock.get(key)
    if due_entries is None:
        due_entries = by_clock[key] = _due_schedule(world, elapsed)
    return due_entries


_DUE_SCHEDULES: IdentityMemo[dict[tuple[int, str, int], list[str]]] = IdentityMemo(4, per_run=True)


def _due_schedule(world: WorldState, elapsed: int) -> list[str]:
    g = world.globals
    since = g.minutes - elapsed
    return [f"{npc.id} -> {entry.location} at {entry.at}"
            + (f" ({entry.activity})" if entry.activity else "")
            for npc in world.npcs.values() for entry in npc.schedule
            if occurs_between(entry.at, since, g.minutes, g.start_clock)]


def due_events(world: WorldState) -> list[str]:
    """Pending events whose clock time has come, counted in minutes since the start."""
    g = world.globals
    return [e.id for e in world.events.values()
            if e.status == "pending" and e.at is not None and due(e.at, g.minutes, g.start_clock)]


__all__ = ["PhaseOutput", "parse_ops", "check_ops", "phase_schema", "phase_messages",
           "decoding_schema"]
