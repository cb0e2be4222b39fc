"""The Judge: 8 feasibility dimensions and an outcome distribution for one action."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..backends.base import Message
from ..float_sum import sequential_sum
from ..world import WorldState
from .attacker import Action
from .prompting import render, system_message
from .render import full_view
from .schema import decoding_schema, restrict

DIMENSIONS = ("existence", "physical", "method", "logical_consistency", "safety", "skill",
              "relationship", "objectivity")
OutcomeType = Literal["full_success", "success_with_cost", "partial_success",
                      "failure_no_consequence", "failure_with_consequence",
                      "catastrophic_failure", "physically_impossible"]
PROBABILITY_CHOICES = [round(0.05 * i, 2) for i in range(1, 21)]  # decoded in 5% steps, never 0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DimensionScore(_Strict):
    score: int = Field(ge=1, le=5, description="1 = clearly fails this check, 5 = clearly passes.")
    reason: str = Field(max_length=80)


class Dimensions(_Strict):
    existence: DimensionScore
    physical: DimensionScore
    method: DimensionScore
    logical_consistency: DimensionScore
    safety: DimensionScore
    skill: DimensionScore
    relationship: DimensionScore
    objectivity: DimensionScore


class Outcome(_Strict):
    type: OutcomeType
    description: str = Field(max_length=120)
    probability: float = Field(ge=0.0, description="Normalised by the engine to sum to 1.")


class JudgeOutput(_Strict):
    dimensions: Dimensions
    physically_possible: bool
    outcomes: list[Outcome] = Field(min_length=1, max_length=4)
    risky: bool = Field(description="Could this action end the run (arrest, death)?")


def assess_messages(world: WorldState, action: Action) -> list[Message]:
    actor = world.members[action.actor]
    return [system_message("judge_system", dimensions=DIMENSIONS),
            Message(role="user", content=render(
                "judge_assess", world=full_view(world), action=action, actor=actor))]


@cache
def assess_schema() -> dict[str, Any]:
    """Made once and shared, so callers must not change it."""
    return restrict(decoding_schema(JudgeOutput), {"probability": PROBABILITY_CHOICES})


def check_judgment(output: JudgeOutput) -> str | None:
    if sequential_sum(o.probability for o in output.outcomes) <= 0:
        return "outcome probabilities are all zero"
    return None


def effective_distribution(output: JudgeOutput) -> list[dict[str, Any]]:
    """The distribution the engine samples from: normalised; physically impossible -> p=1 failure."""
    if not output.physically_possible:
        return [{"type": "physically_impossible", "description": "The action is physically impossible.",
                 "probability": 1.0}]
    total = sequential_sum(o.probability for o in output.outcomes)
    return [{"type": o.type, "description": o.description,
             "probability": round(o.probability / total, 12)} for o in output.outcomes]
