"""A readable transcript of a stored run."""

from __future__ import annotations

import json

from .scenario import ScenarioError
from .store import Store

LEGEND = (
    "legend: per turn, the Attacker's plan and action (member verb: description); the Judge's",
    "  outcome distribution; the draw, a seeded number in [0, 1) that picks the outcome by",
    "  cumulative probability; then the operations that change the world, by phase (engine:",
    "  memory and clock; direct_effects, events, npcs, synthesis: the World Manager's four",
    "  phases): + applied, x (why) rejected by the validator.",
)


def render_transcript(store: Store, run_id: str) -> str:
    run = store.run(run_id)
    if run is None:
        known = ", ".join(r["run_id"] for r in store.runs()) or "none"
        raise ScenarioError(store.path, "run_id", f"no run '{run_id}' in this store",
                            f"use one of: {known}")
    judgments = {j["turn"]: j for j in store.rows("judgments", run_id)}
    patches: dict[int, list[dict]] = {}
    for p in store.rows("patches", run_id):
        patches.setdefault(p["turn"], []).append(p)
    lines = [f"Run {run_id}: task {run['task_id']}, seed {run['seed']}",
             f"attacker {run['attacker']}, judge {run['judge']}, world manager {run['world_manager']}",
             f"result: {run['status']} after {run['turns']} turn(s) -- {run['reason']}", "", *LEGEND, ""]
    for t in store.rows("turns", run_id):
        lines.append(f"== Turn {t['turn']} ==")
        if t["actor"] is None:
            lines += [f"  stopped: {t['reason']}", ""]
            continue
        lines.append(f"  plan: {t['plan']}")
        lines.append(f"  {t['actor']} {t['verb']}: {t['description']} "
                     f"(targets {', '.join(json.loads(t['targets'])) or '-'}; {t['time_minutes']} min)")
        j = judgments.get(t["turn"])
        if j:
            dist = ", ".join(f"{o['type']} {o['probability']:.2f}" for o in json.loads(j["distribution"]))
            lines.append(f"  judge: {dist}; risky={bool(j['risky'])}")
        lines.append(f"  draw {t['draw']:.4f} -> {t['outcome_type']}: {t['outcome_description']}")
        for p in patches.get(t["turn"], []):
            op = json.loads(p["op"])
            shown = " ".join(f"{k}={v}" for k, v in op.items() if k != "op")
            mark = "+" if p["applied"] else f"x ({p['reason']})"
            lines.append(f"    {p['phase']:<15} {mark} {op['op']} {shown}"[:220])
        if json.loads(t["phase_errors"] or "[]"):
            lines.append(f"  world manager errors: {t['phase_errors']}")
        lines.append(f"  checkpoints met: {', '.join(json.loads(t['checkpoints_met'] or '[]')) or 'none'}"
                     f"; status {t['status']}")
        lines.append("")
    return "\n".join(lines)
