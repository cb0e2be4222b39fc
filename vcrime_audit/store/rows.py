"""Flatten a TurnRecord into the store's rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..agents.judge import JudgeOutput, effective_distribution
from ..canonical import canonical_json
from ..harm import classify, default_lexicon
from ..outcomes import catastrophic, non_failure

if TYPE_CHECKING:  # the store writes what the engine returns; it never runs the engine
    from ..engine import TurnRecord


def turn_rows(run_id: str, rec: TurnRecord, judge_model: str) -> dict[str, list[dict[str, Any]]]:
    action, world = rec.action, rec.world_before
    after = rec.world_after
    turn = {
        "run_id": run_id, "turn": rec.turn,
        "actor": action.actor if action else None,
        "actor_is_leader": int(world.members[action.actor].leader) if action else None,
        "verb": action.verb if action else None,
        "description": action.description if action else None,
        "targets": canonical_json(action.targets) if action else None,
        "time_minutes": action.time_minutes if action else None,
        "memory": rec.plan.memory if rec.plan else None,
        "plan": rec.plan.plan if rec.plan else None,
        "observation": rec.observation,
        "outcome_type": rec.outcome["type"] if rec.outcome else None,
        "outcome_description": rec.outcome["description"] if rec.outcome else None,
        "draw": rec.draw, "status": rec.status, "reason": rec.reason,
        "phase_errors": canonical_json(rec.phase_errors),
        "checkpoints_met": canonical_json(sorted(f.id for f in after.checkpoints.values() if f.met))
        if after else None,
        "failures_met": canonical_json(sorted(f.id for f in after.failures.values() if f.met))
        if after else None,
        "world_before": world.to_json(),
        "world_after_hash": after.digest() if after else None,
    }
    calls = [{"run_id": run_id, "turn": rec.turn, "seq": i, **c.fields(), "ok": int(c.ok)}
             for i, c in enumerate(rec.calls)]
    judgments = []
    if rec.judgment is not None:
        judgments.append(judgment_row(run_id, rec.turn, judge_model, rec.judgment, "live",
                                      rec.outcome["type"] if rec.outcome else None, rec.draw))
    patches = [{"run_id": run_id, "turn": rec.turn, "seq": i, "phase": p.phase, "source": p.source,
                "op": canonical_json(p.op), "applied": int(p.applied), "reason": p.reason}
               for i, p in enumerate(rec.patches)]
    return {"turns": [turn], "calls": calls, "judgments": judgments, "patches": patches,
            "harm": harm_rows(run_id, rec)}


def judgment_row(run_id: str, turn: int, judge_model: str, output: JudgeOutput, source: str,
                 sampled_outcome: str | None = None, draw: float | None = None) -> dict[str, Any]:
    """A `judgments` row: the judge's answer and the distribution the engine samples from."""
    distribution = effective_distribution(output)
    return {"run_id": run_id, "turn": turn, "judge": judge_model, "source": source,
            "dimensions": canonical_json(output.dimensions),
            "physically_possible": int(output.physically_possible),
            "raw_outcomes": canonical_json(output.outcomes), "distribution": canonical_json(distribution),
            "risky": int(output.risky), "non_failure": non_failure(distribution),
            "catastrophic": catastrophic(distribution), "sampled_outcome": sampled_outcome, "draw": draw}


def harm_rows(run_id: str, rec: TurnRecord) -> list[dict[str, Any]]:
    """The over-harm reading of the turn's attacker action (none when the turn has no action)."""
    if rec.action is None:
        return []
    lexicon = default_lexicon()
    reading = classify(rec.action, lexicon)
    return [{"run_id": run_id, "turn": rec.turn, "force": reading.force, "damage": reading.damage,
             "lexicon_digest": lexicon.digest}]
