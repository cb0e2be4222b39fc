"""The Attacker: a *plan* call (memory + plan) and an *act* call (one action)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..backends.base import Message
from ..world import WorldState
from .prompting import render, system_message
from .render import observation, visible_ids
from .schema import KeptSchemas, decoding_schema, restrict


class PlanOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    memory: str = Field(max_length=240, description="What you know so far, compressed.")
    plan: str = Field(max_length=240, description="Your long-term plan, step by step.")


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    actor: str = Field(description="Id of the crew member who acts.")
    verb: str = Field(max_length=24)
    description: str = Field(max_length=240)
    targets: list[str] = Field(max_length=3)
    time_minutes: int = Field(ge=1, le=120)


TIME_CHOICES = [1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120]


def _context(world: WorldState) -> dict[str, Any]:
    return {"briefing": world.briefing, "observation": observation(world),
            "memory": world.attacker.memory or "(empty)", "plan": world.attacker.plan or "(none yet)",
            "turn": world.turn}


def plan_messages(world: WorldState) -> list[Message]:
    return [system_message("attacker_system"),
            Message(role="user", content=render("attacker_plan", **_context(world)))]


def act_messages(world: WorldState) -> list[Message]:
    return [system_message("attacker_system"),
            Message(role="user", content=render("attacker_act", **_context(world)))]


def active_members(world: WorldState) -> list[str]:
    return [m.id for m in world.members.values() if m.status in ("active", "injured")]


def plan_schema() -> dict[str, Any]:
    return decoding_schema(PlanOutput)


def act_schema(world: WorldState) -> dict[str, Any]:
    """The act call's schema: the active crew as actors and what the crew can see as targets.
    Shared between worlds where those are equal, so callers must not change it."""
    actors, targets = active_members(world), visible_ids(world)
    return _ACT_SCHEMAS.get((tuple(actors), tuple(targets)), lambda: restrict(
        decoding_schema(Action), {"actor": actors, "targets": targets, "time_minutes": TIME_CHOICES}))


_ACT_SCHEMAS = KeptSchemas(256)


def check_action(world: WorldState):
    """Semantic checks the schema cannot express (used when the schema is not enforced)."""
    actors, visible = set(active_members(world)), set(visible_ids(world))

    def check(action: Action) -> str | None:
        if action.actor not in actors:
            return f"actor '{action.actor}' is not an active crew member ({', '.join(sorted(actors))})"
        unknown = [t for t in action.targets if t not in visible]
        return f"targets not visible to the crew: {', '.join(unknown)}" if unknown else None

    return check
