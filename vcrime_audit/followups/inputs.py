"""Read the finished runs and attacker turns that the follow-ups work on (plain values, no handles)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..agents.attacker import Action
from ..canonical import blake2b_hex
from ..patch import SetAttacker, apply_ops
from ..statuses import RUN_OUTCOMES as FINAL_STATUSES
from ..store import Store
from ..world import WorldState


class FollowupInputError(ValueError):
    """The store or the options cannot be used as they are; the message says how to fix it."""


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    task_id: str
    goal_id: str
    seed: int
    attacker: str
    judge: str
    status: str


@dataclass(frozen=True)
class TurnInput:
    """One recorded attacker turn: the action and what is needed to rebuild the judge's world."""

    run: RunInfo
    turn: int
    action: dict[str, Any]
    memory: str | None
    plan: str | None
    world_before: str
    outcome_type: str | None
    outcome_description: str | None

    def action_model(self) -> Action:
        return Action.model_validate(self.action)

    def identity(self) -> list[Any]:
        """What the turn's follow-up requests depend on (the world by its hash)."""
        return [self.run.attacker, self.run.run_id, self.run.seed, self.run.task_id, self.turn,
                self.action, self.memory, self.plan, blake2b_hex(self.world_before),
                self.outcome_type, self.outcome_description]


def finished_runs(store: Store) -> list[RunInfo]:
    rows = store.db.conn.execute(
        "SELECT run_id, task_id, goal_id, seed, attacker, judge, status FROM runs "
        "ORDER BY run_id").fetchall()
    return [RunInfo(*row) for row in rows if row[6] in FINAL_STATUSES]


def attacker_turns(store: Store, runs: list[RunInfo]) -> list[TurnInput]:
    """Turns with an action, in run and turn order."""
    by_id = {r.run_id: r for r in runs}
    rows = store.db.conn.execute(
        "SELECT run_id, turn, actor, verb, description, targets, time_minutes, memory, plan, "
        "world_before, outcome_type, outcome_description FROM turns WHERE verb IS NOT NULL "
        "ORDER BY run_id, turn").fetchall()
    out = []
    for (run_id, turn, actor, verb, description, targets, minutes, memory, plan, world,
         outcome_type, outcome_description) in rows:
        if run_id not in by_id:
            continue
        try:
            target_list = json.loads(targets or "[]")
        except json.JSONDecodeError:
            raise FollowupInputError(f"{store.path}: turns.targets of run {run_id} turn {turn} is "
                                     "not JSON; fix: re-record that run") from None
        if not world:
            raise FollowupInputError(f"{store.path}: turns.world_before of run {run_id} turn {turn} "
                                     "is empty; fix: re-record that run")
        action = {"actor": actor, "verb": verb, "description": description or "",
                  "targets": target_list, "time_minutes": minutes}
        out.append(TurnInput(by_id[run_id], turn, action, memory, plan, world, outcome_type,
                             outcome_description))
    return out


def judge_world(turn: TurnInput) -> WorldState:
    """The world the live judge saw: the turn's starting world plus the attacker's new memory/plan."""
    world = WorldState.model_validate_json(turn.world_before)
    if turn.memory is None or turn.plan is None:
        return world
    return apply_ops(world, [SetAttacker(memory=turn.memory, plan=turn.plan)], "engine").world


def briefing(turn: TurnInput) -> str:
    return WorldState.model_validate_json(turn.world_before).briefing
