"""Patch operations on a WorldState and the deterministic validator that applies them.

The World Manager emits operations, never whole worlds. :func:`apply_ops` is the only code
that changes a world during an episode: it checks each operation against the rules below and
either applies it or drops it with a reason, so the result is always a valid world.

Rules: members, NPCs and loose items move at most one edge per turn (relative to where they
stood when the turn began); nothing moves between non-adjacent locations; key items and NPCs
are never destroyed or duplicated; operations that name unknown ids are dropped; an arrest
stands and death is final: no operation, in any phase, changes an arrested or dead member's
status, and such a member neither moves nor takes anything.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .world import OBJECT_TABLES, Member, WorldState

MEMBER_STATUSES = ("active", "injured", "arrested", "dead")
FINAL_MEMBER_STATUSES = ("arrested", "dead")
NPC_STATUSES = ("normal", "alert", "incapacitated", "restrained", "absent")


class _Op(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Move(_Op):
    op: Literal["move"] = "move"
    target: str = Field(description="Id of a crew member, NPC or loose item.")
    to: str = Field(description="Id of an adjacent location.")


class Take(_Op):
    op: Literal["take"] = "take"
    entity: str
    by: str = Field(description="Id of the crew member or NPC who now carries it.")


class Drop(_Op):
    op: Literal["drop"] = "drop"
    entity: str


class SetState(_Op):
    op: Literal["set_state"] = "set_state"
    entity: str
    key: str = Field(max_length=32)
    value: str = Field(max_length=32)


class SetStatus(_Op):
    op: Literal["set_status"] = "set_status"
    target: str
    status: str


class Note(_Op):
    """Append a line to an object's history."""

    op: Literal["note"] = "note"
    target: str
    text: str = Field(max_length=160)


class Observe(_Op):
    """Replace what can be noticed about an object."""

    op: Literal["observe"] = "observe"
    target: str
    text: str = Field(max_length=160)


class Destroy(_Op):
    op: Literal["destroy"] = "destroy"
    entity: str


class SetAlarm(_Op):
    op: Literal["set_alarm"] = "set_alarm"
    level: int = Field(ge=0, le=3)


class SetWeather(_Op):
    op: Literal["set_weather"] = "set_weather"
    weather: str = Field(max_length=60)


class EventUpdate(_Op):
    op: Literal["event"] = "event"
    event: str
    status: Literal["pending", "active", "done"]
    note: str = Field("", max_length=200)


class FlagUpdate(_Op):
    """Set a checkpoint or failure whose condition is ``judged``."""

    op: Literal["flag"] = "flag"
    flag: str
    met: bool


class AdvanceClock(_Op):
    """Engine only: time spent by the action."""

    op: Literal["advance_clock"] = "advance_clock"
    minutes: int = Field(ge=0, le=24 * 60)


class SetAttacker(_Op):
    """Engine only: the attacker's compressed memory and plan."""

    op: Literal["set_attacker"] = "set_attacker"
    memory: str
    plan: str


Op = Annotated[
    Move | Take | Drop | SetState | SetStatus | Note | Observe | Destroy | SetAlarm | SetWeather
    | EventUpdate | FlagUpdate | AdvanceClock | SetAttacker,
    Field(discriminator="op"),
]

PHASE_OPS: dict[str, tuple[type[_Op], ...]] = {
    "direct_effects": (Move, Take, Drop, SetState, SetStatus, Note, Destroy),
    "events": (EventUpdate, SetAlarm, Note),
    "npcs": (Move, Take, SetStatus, Note, SetAlarm),
    "synthesis": (Observe, FlagUpdate, SetWeather),
    "engine": (AdvanceClock, SetAttacker, SetStatus, Note),
}
PHASES = ("direct_effects", "events", "npcs", "synthesis")


@dataclass
class PatchResult:
    world: WorldState
    applied: list[_Op] = field(default_factory=list)
    dropped: list[tuple[_Op, str]] = field(default_factory=list)


class _Drop(Exception):
    pass


def _check(condition: bool, reason: str) -> None:
    if not condition:
        raise _Drop(reason)


class Draft:
    """A copy-on-write world: its tables and objects are shared with the original until
    :meth:`own` copies an object for writing, and the table holding it the first time; its
    globals and the attacker's state until :meth:`own_part` copies them. Nothing
    reachable from the original is changed, and a table nothing was changed in stays the very
    same dict (what is kept per table, ``world._TABLE_JSON``, is reused)."""

    def __init__(self, world: WorldState) -> None:
        self.world = world.shallow_copy()
        self._owned: set[tuple[str, str]] = set()
        self._copied: set[str] = set()

    def own_part(self, name: str) -> Any:
        """The world's ``globals`` or ``attacker``, copied the first time it is asked for, for
        changing in place (most patches change neither: a World Manager phase's rarely do)."""
        if ("", name) not in self._owned:
            if name not in ("globals", "attacker"):
                raise ValueError(f"{name!r} is not a part of the world changed in place")
            self.world.__dict__[name] = getattr(self.world, name).shallow_copy()
            self._owned.add(("", name))
        return getattr(self.world, name)

    @property
    def owned(self) -> bool:
        """Whether any object was copied for changing."""
        return bool(self._owned)

    def own(self, table: str, object_id: str) -> Any:
        """The object, copied (deeply) the first time it is asked for, for changing in place."""
        if (table, object_id) not in self._owned:
            objects = self._table_for_writing(table)
            objects[object_id] = _copy_for_writing(objects[object_id])
            self._owned.add((table, object_id))
        return getattr(self.world, table)[object_id]

    def _table_for_writing(self, table: str) -> dict[str, Any]:
        if table not in self._copied:
            if table not in OBJECT_TABLES:
                raise ValueError(f"{table!r} is not a table of world objects")
            self.world.__dict__[table] = dict(getattr(self.world, table))
            self._copied.add(table)
        return getattr(self.world, table)


_LEAVES = (str, int, float, bool, type(None))


def _copy_value(value: Any) -> Any:
    if type(value) in _LEAVES:
        return value
    if type(value) is list:
        return [v if type(v) in _LEAVES else copy.deepcopy(v) for v in value]
    if type(value) is dict:
        return {k: v if type(v) in _LEAVES else copy.deepcopy(v) for k, v in value.items()}
    return copy.deepcopy(value)


def _copy_for_writing(obj: Any) -> Any:
    """What ``obj.model_copy(deep=True)`` makes, with lists and dicts of plain values copied
    one level (their values cannot change in place) instead of walked by ``deepcopy``."""
    copied = obj.shallow_copy()  # a new __dict__ (and set of fields set), values shared
    copied.__dict__.update({name: _copy_value(value) for name, value in obj.__dict__.items()
                            if type(value) not in _LEAVES})
    return copied


def _table(world: WorldState, object_id: str, tables: tuple[str, ...]) -> str | None:
    return next((t for t in tables if object_id in getattr(world, t)), None)


MOBILE = ("members", "npcs", "entities")


def _carry_along(draft: Draft, holder_id: str, location: str) -> None:
    for ent in list(draft.world.entities.values()):
        if ent.holder == holder_id and ent.current_location != location:
            draft.own("entities", ent.id).current_location = location


def _apply_one(draft: Draft, op: _Op, turn_start: dict[str, str]) -> None:
    """Every check of an operation runs before its first change, so a dropped one leaves no trace."""
    world = draft.world
    if isinstance(op, Move):
        obj = world.mobile(op.target)
        _check(obj is not None, f"unknown id '{op.target}'")
        _check(op.to in world.locations, f"unknown location '{op.to}'")
        if isinstance(obj, Member):
            _check(obj.status in ("active", "injured"), f"member '{obj.id}' is {obj.status}")
        if hasattr(obj, "holder"):
            _check(obj.holder is None, f"'{obj.id}' is carried by '{obj.holder}'; move the carrier")
            _check(obj.portable and not obj.destroyed, f"'{obj.id}' cannot be moved")
        origin = turn_start.get(obj.id, obj.current_location)
        _check(world.adjacent(origin, op.to),
               f"'{obj.id}' started the turn in '{origin}', not adjacent to '{op.to}'")
        draft.own(_table(world, obj.id, MOBILE), obj.id).current_location = op.to
        _carry_along(draft, obj.id, op.to)
    elif isinstance(op, Take):
        ent = world.entities.get(op.entity)
        _check(ent is not None, f"unknown entity '{op.entity}'")
        taker = world.members.get(op.by) or world.npcs.get(op.by)
        _check(taker is not None, f"unknown member or NPC '{op.by}'")
        _check(ent.portable and not ent.destroyed, f"'{ent.id}' cannot be carried")
        if isinstance(taker, Member):
            _check(taker.status not in FINAL_MEMBER_STATUSES, f"member '{taker.id}' is {taker.status}")
        _check(ent.current_location == taker.current_location,
               f"'{ent.id}' is in '{ent.current_location}', '{taker.id}' in '{taker.current_location}'")
        draft.own("entities", ent.id).holder = taker.id
    elif isinstance(op, Drop):
        ent = world.entities.get(op.entity)
        _check(ent is not None, f"unknown entity '{op.entity}'")
        _check(ent.holder is not None, f"'{ent.id}' is not carried")
        draft.own("entities", ent.id).holder = None
    elif isinstance(op, SetState):
        _check(op.entity in world.entities, f"unknown entity '{op.entity}'")
        draft.own("entities", op.entity).state[op.key] = op.value
    elif isinstance(op, SetStatus):
        if op.target in world.members:
            _check(op.status in MEMBER_STATUSES, f"member status must be one of {MEMBER_STATUSES}")
            now = world.members[op.target].status
            _check(now not in FINAL_MEMBER_STATUSES or op.status == now,
                   f"member '{op.target}' is {now}; an arrest stands and death is final, "
                   f"so it cannot become {op.status}")
            draft.own("members", op.target).status = op.status
        elif op.target in world.npcs:
            _check(op.status in NPC_STATUSES, f"NPC status must be one of {NPC_STATUSES}")
            draft.own("npcs", op.target).status = op.status
        else:
            raise _Drop(f"unknown member or NPC '{op.target}'")
    elif isinstance(op, (Note, Observe)):
        table = _table(world, op.target, ("locations", *MOBILE))
        _check(table is not None, f"unknown id '{op.target}'")
        obj = draft.own(table, op.target)
        if isinstance(op, Note):
            obj.history.append(op.text)
        else:
            obj.observable = op.text
    elif isinstance(op, Destroy):
        ent = world.entities.get(op.entity)
        _check(ent is not None, f"unknown entity '{op.entity}'")
        _check(not ent.key, f"'{ent.id}' is a key item and cannot be destroyed")
        ent = draft.own("entities", ent.id)
        ent.destroyed, ent.holder = True, None
    elif isinstance(op, SetAlarm):
        draft.own_part("globals").alarm_level = op.level
    elif isinstance(op, SetWeather):
        draft.own_part("globals").weather = op.weather
    elif isinstance(op, EventUpdate):
        _check(op.event in world.events, f"unknown event '{op.event}'")
        event = draft.own("events", op.event)
        event.status = op.status
        if op.note:
            event.notes.append(op.note)
    elif isinstance(op, FlagUpdate):
        table = _table(world, op.flag, ("checkpoints", "failures"))
        _check(table is not None, f"unknown flag '{op.flag}'")
        flag = getattr(world, table)[op.flag]
        _check(flag.condition.kind == "judged", f"'{flag.id}' is decided by its condition")
        flag = draft.own(table, op.flag)
        if op.met and not flag.met:
            flag.met_turn = world.turn
        flag.met = op.met
    elif isinstance(op, AdvanceClock):
        draft.own_part("globals").advance(op.minutes)
    elif isinstance(op, SetAttacker):
        attacker = draft.own_part("attacker")
        attacker.memory, attacker.plan = op.memory, op.plan


def turn_start_locations(world: WorldState) -> dict[str, str]:
    objects = [*world.members.values(), *world.npcs.values(), *world.entities.values()]
    return {o.id: o.current_location for o in objects}


def apply_ops(world: WorldState, ops: list[_Op], phase: str,
              turn_start: dict[str, str] | None = None) -> PatchResult:
    """Apply the operations allowed in ``phase``; drop the rest with a reason. Pure: the result
    shares unchanged objects with ``world`` and changes nothing reachable from it."""
    draft = Draft(world)
    turn_start = turn_start if turn_start is not None else turn_start_locations(world)
    result = PatchResult(world=draft.world)
    allowed = PHASE_OPS[phase]
    for op in ops:
        if not isinstance(op, allowed):
            result.dropped.append((op, f"'{op.op}' is not allowed in phase '{phase}'"))
            continue
        try:
            _apply_one(draft, op, turn_start)
        except _Drop as exc:
            result.dropped.append((op, str(exc)))
            continue
        result.applied.append(op)
    new = draft.world
    for ent in list(new.entities.values()):
        if ent.holder is not None:
            holder = new.mobile(ent.holder)
            if ent.current_location != holder.current_location:  # type: ignore[union-attr]
                draft.own("entities", ent.id).current_location = holder.current_location  # type: ignore[union-attr]
    if not result.applied and not draft.owned:
        result.world = world  # nothing changed: the same world, so what is kept per world is reused
    return result
