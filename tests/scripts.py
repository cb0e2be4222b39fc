"""Scripted agent answers for engine tests: a tiny, legible crew that follows a fixed plan."""

from __future__ import annotations

from typing import Any

from vcrime_audit.agents.judge import DIMENSIONS


def judge_answer(outcomes: list[tuple[str, float]], possible: bool = True, risky: bool = False):
    return {"dimensions": {d: {"score": 4, "reason": "plausible"} for d in DIMENSIONS},
            "physically_possible": possible, "risky": risky,
            "outcomes": [{"type": t, "description": t.replace("_", " "), "probability": p}
                         for t, p in outcomes]}


def scripted_episode(actions: list[dict[str, Any]], judge: dict[str, Any],
                     phase_ops: dict[str, list[list[dict[str, Any]]]] | None = None):
    """Answer turn t with actions[t-1]; WM phase answers per turn from ``phase_ops``."""
    phase_ops = phase_ops or {}

    def answer(request):
        turn = int(request.messages[1].content.split("Turn ")[1].split(".")[0]) if \
            request.role == "attacker" else None
        if request.call == "plan":
            return {"memory": f"turn {turn}", "plan": "go upstairs"}
        if request.call == "act":
            return actions[min(turn, len(actions)) - 1]
        if request.call == "assess":
            return judge
        per_turn = phase_ops.get(request.call, [])
        index = int(request.messages[1].content.split("turn ")[1].split(".")[0]) - 1
        return {"ops": per_turn[index] if index < len(per_turn) else []}

    return answer
