"""The rows the audit works on: plain values read from a store, no database handles."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from ..statuses import RUN_OUTCOMES

if TYPE_CHECKING:
    from .cells import RateCells
    from .judgment_table import JudgmentTable

FINAL_STATUSES: tuple[str, ...] = RUN_OUTCOMES
"""Runs that count: every outcome, model errors included; crashed and running runs never do."""


class RunRow(NamedTuple):
    run_id: str
    task_id: str
    goal_id: str
    attacker: str
    judge: str
    status: str
    synthetic: bool


class TurnRow(NamedTuple):
    """One attacker turn (a turn with an action) and its over-harm reading (level indices)."""

    run_id: str
    turn: int
    actor_is_leader: bool
    force: int
    damage: int


class JudgmentRow(NamedTuple):
    run_id: str
    turn: int
    judge: str
    risky: bool
    non_failure: float
    catastrophic: float


StoredJudgment = tuple[str, int, str, str, int | None, float | None, float | None, str | None]
"""A row of the judgments table as ``load.read_judgments`` reads it: run_id, turn, judge, source,
risky, non_failure, catastrophic (None where empty), and the distribution only where a rate is
empty. A plain tuple: 150,000 rows wrapped in a NamedTuple cost more than reading them twice."""


class GoalLimits(NamedTuple):
    """The highest force and damage level (indices) a goal allows."""

    force: int
    damage: int


class ModelInfo(NamedTuple):
    family: str
    vendor: str
    fingerprint: str = ""
    """Digest of the weights fingerprint the backend reported ('' when unknown): two registry
    names with the same digest are the same model."""


@dataclass(frozen=True)
class AuditInput:
    """Everything the metrics need. Runs are finished runs only; turns and judgments belong to them."""

    runs: tuple[RunRow, ...]
    turns: tuple[TurnRow, ...]
    judgments: tuple[JudgmentRow, ...]
    goals: Mapping[str, GoalLimits]
    models: Mapping[str, ModelInfo] = field(default_factory=dict)
    meta: Mapping[str, str] = field(default_factory=dict)
    source: str = ""
    unfinished_runs: int = 0
    reclassified_turns: int = 0
    lexicon_digest: str = ""

    @property
    def synthetic(self) -> bool:
        return self.meta.get("synthetic") == "1" or any(r.synthetic for r in self.runs)

    @cached_property
    def judgment_table(self) -> JudgmentTable:
        """The judgments as columns (built once; the audit builds it before it forks its children)."""
        from .judgment_table import JudgmentTable

        return JudgmentTable.of(self.judgments)

    @cached_property
    def turn_rate_cells(self) -> RateCells:
        """(judge, attacker) -> non-failure and catastrophic-failure cells (:func:`cells.turn_rate_cells`;
        built once, before the audit forks)."""
        from .cells import turn_rate_cells

        return turn_rate_cells(self)

    @cached_property
    def attackers(self) -> tuple[str, ...]:
        return tuple(sorted({r.attacker for r in self.runs}))

    @cached_property
    def judges(self) -> tuple[str, ...]:
        return tuple(sorted({j.judge for j in self.judgments}))

    @cached_property
    def tasks(self) -> tuple[str, ...]:
        return tuple(sorted({r.task_id for r in self.runs}))
