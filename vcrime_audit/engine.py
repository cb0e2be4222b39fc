"""The turn loop. Async and pure: no files, no database, no clock; randomness from seeds.

observe -> Attacker.plan -> Attacker.act -> Judge.assess -> sample outcome (seeded)
-> World Manager phases 1-4 (each validated by :func:`patch.apply_ops`) -> flags -> termination.
Each finished turn is handed to ``on_turn``; the caller decides where it goes.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .agents import attacker, judge, world_manager
from .agents.attacker import Action, PlanOutput
from .agents.calling import CallRecord, ModelOutputError, call_structured
from .agents.judge import JudgeOutput, effective_distribution
from .backends.base import ModelBackend
from .flags import refresh_flags
from .models import ModelEntry
from .outcomes import CATASTROPHIC
from .patch import (
    PHASES,
    AdvanceClock,
    Note,
    PatchResult,
    SetAttacker,
    SetStatus,
    apply_ops,
    turn_start_locations,
)
from .seeds import blake2b_seed
from .statuses import LOST, MAX_TURNS, MODEL_ERROR, RUNNING, STALLED, WON
from .world import WorldState


@dataclass(frozen=True)
class EpisodeLimits:
    max_turns: int = 60
    stall_turns: int = 30


@dataclass(frozen=True)
class Roles:
    attacker: ModelEntry
    judge: ModelEntry
    world_manager: ModelEntry


@dataclass
class PatchRow:
    phase: str
    source: str
    op: dict[str, Any]
    applied: bool
    reason: str = ""


@dataclass
class TurnRecord:
    turn: int
    world_before: WorldState
    observation: str
    plan: PlanOutput | None = None
    action: Action | None = None
    judgment: JudgeOutput | None = None
    distribution: list[dict[str, Any]] = field(default_factory=list)
    draw: float | None = None
    outcome: dict[str, Any] | None = None
    patches: list[PatchRow] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    phase_errors: list[str] = field(default_factory=list)
    world_after: WorldState | None = None
    status: str = RUNNING
    reason: str = ""


def sample_outcome(distribution: list[dict[str, Any]], draw: float) -> dict[str, Any]:
    cumulative = 0.0
    for outcome in distribution:
        cumulative += outcome["probability"]
        if draw < cumulative:
            return outcome
    return distribution[-1]


def termination(world: WorldState, limits: EpisodeLimits) -> tuple[str, str]:
    triggered = [f.id for f in world.failures.values() if f.met]
    if triggered:
        return LOST, f"critical failure: {', '.join(triggered)}"
    if all(f.met for f in world.checkpoints.values()):
        return WON, "all checkpoints met"
    if world.turn >= limits.max_turns:
        return MAX_TURNS, f"reached {limits.max_turns} turns"
    last_progress = max((f.met_turn or 0 for f in world.checkpoints.values() if f.met), default=0)
    if world.turn - last_progress >= limits.stall_turns:
        return STALLED, f"{limits.stall_turns} turns without a new checkpoint"
    return RUNNING, ""


def _describe(op: dict[str, Any]) -> str:
    """An applied operation (its fields, dumped) as the later phases' prompts name it."""
    return f"{op['op']} " + ", ".join(f"{k}={v}" for k, v in op.items() if k != "op")


def _patch_rows(phase: str, source: str, result: PatchResult) -> list[PatchRow]:
    """The applied operations, then the dropped ones with their reasons, each dumped once."""
    return ([PatchRow(phase, source, op.model_dump(), True) for op in result.applied]
            + [PatchRow(phase, source, op.model_dump(), False, why) for op, why in result.dropped])


class Engine:
    def __init__(self, backend: ModelBackend, roles: Roles, limits: EpisodeLimits | None = None) -> None:
        self.backend, self.roles = backend, roles
        self.limits = limits or EpisodeLimits()

    async def run(self, world: WorldState, seed: int,
                  on_turn: Callable[[TurnRecord], Awaitable[None]]) -> TurnRecord | None:
        """Play from ``world`` (turn 0, or the last committed turn when resuming) to the end."""
        last: TurnRecord | None = None
        status, _ = termination(world, self.limits) if world.turn else (RUNNING, "")
        while status == RUNNING:
            last = await self.turn(world, seed)
            await on_turn(last)
            if last.world_after is None:
                break
            world, status = last.world_after, last.status
        return last

    async def turn(self, world: WorldState, seed: int) -> TurnRecord:
        world = world.shallow_copy({"turn": world.turn + 1})
        rec = TurnRecord(turn=world.turn, world_before=world, observation="")
        rec.observation = attacker.observation(world)
        try:
            world = await self._attacker(world, seed, rec)
            rec.judgment = await self._judge(world, seed, rec)
        except ModelOutputError as exc:
            rec.status, rec.reason = MODEL_ERROR, str(exc)
            return rec
        rec.distribution = effective_distribution(rec.judgment)
        rec.draw = random.Random(blake2b_seed(seed, world.task_id, world.turn, "outcome")).random()
        rec.outcome = sample_outcome(rec.distribution, rec.draw)
        world = await self._world_manager(world, seed, rec)
        world = refresh_flags(world)
        rec.world_after = world
        rec.status, rec.reason = termination(world, self.limits)
        return rec

    def _engine_ops(self, world: WorldState, rec: TurnRecord, ops: list[Any],
                    turn_start: dict[str, str] | None = None) -> WorldState:
        result = apply_ops(world, ops, "engine", turn_start)
        rec.patches += _patch_rows("engine", "engine", result)
        return result.world

    async def _attacker(self, world: WorldState, seed: int, rec: TurnRecord) -> WorldState:
        role = self.roles.attacker
        rec.plan = await call_structured(
            self.backend, role, role="attacker", call="plan", messages=attacker.plan_messages(world),
            output_model=PlanOutput, schema=attacker.plan_schema(),
            seed=blake2b_seed(seed, world.task_id, world.turn, "attacker.plan"), records=rec.calls)
        world = self._engine_ops(world, rec, [SetAttacker(memory=rec.plan.memory, plan=rec.plan.plan)])
        rec.action = await call_structured(
            self.backend, role, role="attacker", call="act", messages=attacker.act_messages(world),
            output_model=Action, schema=attacker.act_schema(world),
            check=attacker.check_action(world),
            seed=blake2b_seed(seed, world.task_id, world.turn, "attacker.act"), records=rec.calls)
        return world

    async def _judge(self, world: WorldState, seed: int, rec: TurnRecord) -> JudgeOutput:
        assert rec.action is not None
        return await call_structured(
            self.backend, self.roles.judge, role="judge", call="assess",
            messages=judge.assess_messages(world, rec.action), output_model=JudgeOutput,
            schema=judge.assess_schema(), check=judge.check_judgment,
            seed=blake2b_seed(seed, world.task_id, world.turn, "judge.assess"), records=rec.calls)

    async def _world_manager(self, world: WorldState, seed: int, rec: TurnRecord) -> WorldState:
        assert rec.action is not None and rec.outcome is not None
        turn_start = turn_start_locations(rec.world_before)
        engine_ops: list[Any] = [AdvanceClock(minutes=rec.action.time_minutes)]
        if rec.outcome["type"] == CATASTROPHIC:
            engine_ops += [SetStatus(target=rec.action.actor, status="arrested"),
                           Note(target=rec.action.actor, text=f"Turn {world.turn}: caught -- "
                                f"{rec.outcome['description']}")]
        world = self._engine_ops(world, rec, engine_ops, turn_start)
        earlier: list[str] = []
        for phase in PHASES:
            try:
                output = await call_structured(
                    self.backend, self.roles.world_manager, role="world_manager", call=phase,
                    messages=world_manager.phase_messages(world, phase, rec.action, rec.outcome, earlier),
                    output_model=world_manager.PhaseOutput, schema=world_manager.phase_schema(world, phase),
                    check=world_manager.check_ops,
                    seed=blake2b_seed(seed, world.task_id, world.turn, f"wm.{phase}"), records=rec.calls)
            except ModelOutputError as exc:
                rec.phase_errors.append(f"{phase}: {exc}")
                continue
            result = apply_ops(world, world_manager.parse_ops(output), phase, turn_start)
            rows = _patch_rows(phase, "world_manager", result)
            rec.patches += rows
            earlier += [_describe(row.op) for row in rows if row.applied]
            world = result.world
        return world
