"""summary.json (every number of the report) and lineage.json (the runs and turns behind each number).

Each number in summary.json carries a `lineage` key; lineage.json maps that key to run ids and
turn numbers (as ranges, e.g. "1-12,15") or to the keys it was derived from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from .. import __version__
from ..scenario import DAMAGE_LEVELS, FORCE_LEVELS
from .caveats import audit_warnings
from .estimates import HOLM, Estimate
from .followups_report import followups_json
from .judges import JudgeAudit
from .metrics import PAIRWISE_METRICS, AttackerMetrics
from .pipeline import AuditResult
from .synthetic import SYNTHETIC_NOTE

SCHEMA_VERSION = 1


def number(x: float | None) -> float | None:
    """JSON has no NaN: undefined numbers become null."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def turn_ranges(turns: Iterable[int]) -> str:
    """(1, 2, 3, 5, 7, 8) -> '1-3,5,7-8'."""
    ordered = sorted(set(turns))
    if not ordered:
        return ""
    parts: list[str] = []
    first = last = ordered[0]
    for turn in ordered[1:]:
        if turn != last + 1:
            parts.append(str(first) if first == last else f"{first}-{last}")
            first = turn
        last = turn
    parts.append(str(first) if first == last else f"{first}-{last}")
    return ",".join(parts)


def parse_turn_ranges(text: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        out.extend(range(int(first), int(last or first) + 1))
    return out


def estimate_json(e: Estimate) -> dict[str, Any]:
    out = {"estimate": number(e.estimate), "low": number(e.low), "high": number(e.high)}
    if e.numerator is not None:
        out.update(numerator=number(e.numerator), denominator=number(e.denominator))
    if e.n_parts is not None:
        out["judges_with_a_value"] = e.n_parts
    out["undefined_resamples"] = e.undefined
    out["lineage"] = e.key
    return out


def _attacker_json(m: AttackerMetrics, a: str) -> dict[str, Any]:
    return {
        "runs": m.n_runs[a], "attacker_turns": m.n_turns[a],
        "non_failure": {"median": estimate_json(m.non_failure_median[a]),
                        "by_judge": {j: estimate_json(m.non_failure[j][a]) for j in m.judges}},
        "catastrophic_on_risky": {"median": estimate_json(m.catastrophic_median[a]),
                                  "by_judge": {j: estimate_json(m.catastrophic[j][a]) for j in m.judges}},
        "over_harm": estimate_json(m.over_harm[a]),
        "lethal_or_catastrophic": estimate_json(m.extreme_harm[a]),
        "over_harm_runs": m.over_harm_runs.get(a, 0),
        "team_usage": estimate_json(m.team_usage[a]),
        "pass_at_1": estimate_json(m.pass_at_1[a]),
    }


def _judges_json(audit: JudgeAudit) -> dict[str, Any]:
    return {
        "judges": list(audit.judges), "common_turns": audit.common_turns, "note": audit.note,
        "rank_agreement": {
            metric: {"rates_on_common_turns": {j: {a: number(v) for a, v in rates.items()}
                                               for j, rates in ra.rates.items()},
                     "lineage": {j: {a: f"{ra.prefix}/{j}/{a}" for a in rates}
                                 for j, rates in ra.rates.items()},
                     "ranks": ra.ranks, "basis": ra.basis,
                     "spearman": [{"first": p.first, "second": p.second, "rho": number(p.rho),
                                   "attackers": p.n_attackers} for p in ra.pairs]}
            for metric, ra in audit.agreement.items()},
        "self_preference": {
            "pairs": [{"judge": b.judge, "attacker": b.attacker, "relation": b.relation,
                       **estimate_json(b.estimate),
                       "adjusted": estimate_json(b.adjusted) if b.adjusted else None}
                      for b in audit.biases],
            "groups": {name: {"pairs": g.n_pairs, "mean": estimate_json(g.mean),
                              "min": number(g.minimum), "max": number(g.maximum),
                              "adjusted_mean": estimate_json(g.adjusted) if g.adjusted else None,
                              "adjusted_min": number(g.adjusted_minimum),
                              "adjusted_max": number(g.adjusted_maximum)}
                       for name, g in audit.groups.items()},
            "judges": {s.judge: {"attackers": s.n, "mean": number(s.mean), "min": number(s.minimum),
                                 "max": number(s.maximum), "leniency": number(s.leniency)}
                       for s in audit.spreads.values()},
        },
    }


def summary(result: AuditResult) -> dict[str, Any]:
    """Every number of the report. Deterministic for a given store, seed and resample count."""
    m, data = result.metrics, result.data
    return {
        "schema": SCHEMA_VERSION,
        "synthetic": data.synthetic,
        "synthetic_note": SYNTHETIC_NOTE if data.synthetic else "",
        "store": data.source, "vcrime_version": __version__,
        "bootstrap": {"unit": "task", "resamples": m.n_resamples, "seed": m.seed,
                      "confidence": m.confidence, "tasks": len(m.tasks)},
        "counts": {"runs": len(data.runs), "unfinished_runs_left_out": data.unfinished_runs,
                   "attacker_turns": len(data.turns), "judgments": len(data.judgments),
                   "turns_reclassified_now": data.reclassified_turns},
        "lexicon_digest": data.lexicon_digest,
        "attackers": list(m.attackers), "judges": list(m.judges), "tasks": list(m.tasks),
        "table1": {a: _attacker_json(m, a) for a in m.attackers},
        "primary_judge": {"name": m.primary.name, "runs": m.primary.runs,
                          "total_runs": m.primary.total_runs, "chosen_by": m.primary.chosen_by},
        "pairwise": {metric: [{"first": p.first, "second": p.second, "difference": number(p.estimate),
                               "low": number(p.low), "high": number(p.high),
                               "significant": p.significant, "p_value": number(p.p_value),
                               "p_holm": number(p.p_holm),
                               "significant_holm": p.significant_holm(1 - m.confidence),
                               "undefined_resamples": p.undefined} for p in m.pairwise[metric]]
                     for metric in PAIRWISE_METRICS},
        "multiple_comparisons": {"method": HOLM, "tests": m.n_tests, "alpha": 1 - m.confidence},
        "tasks_breakdown": {task: {"runs": b.runs, "wins": b.wins, "wins_by_attacker": b.wins_by_attacker,
                                   "over_harm_runs": b.over_harm, "by_highest_excess_level": b.levels}
                            for task, b in m.task_breakdown.items()},
        "attacker_task_pairs": None if m.pair_breakdown is None else {
            "pairs": m.pair_breakdown.pairs,
            "by_over_harm_runs": {str(k): v for k, v in m.pair_breakdown.by_count.items()},
            "highest_excess_level": m.pair_breakdown.highest,
            "runs_over_on_both_axes": m.pair_breakdown.both_axes_runs,
            "tasks_without_over_harm": m.pair_breakdown.tasks_without_over_harm},
        "warnings": audit_warnings(result),
        "over_harm_by_task": {task: {a: {"over_harm_runs": c.over_harm, "runs": len(c.runs),
                                         "rate": number(c.rate), "run_ids": list(c.runs)}
                                     for a, c in cells.items()}
                              for task, cells in m.task_attacker.items()},
        "over_harm_vs_non_failure": {
            "spearman": number(m.harm_vs_success),
            "points": {a: {"non_failure": number(m.non_failure_median[a].estimate),
                           "over_harm": number(m.over_harm[a].estimate)} for a in m.attackers}},
        "judge_audit": _judges_json(result.judges),
        "followups": followups_json(result.followups) if result.followups is not None else None,
    }


def _cell_json(e: Estimate, ranges: dict[tuple[int, ...], str]) -> dict[str, Any]:
    """``ranges``: :func:`turn_ranges` of turn tuples met before (one run's turns recur in many cells)."""
    if e.derived_from:
        return {"derived_from": list(e.derived_from)}
    turns = {}
    for run_id, t in sorted(e.sources.items()):
        if t:
            t = tuple(t)
            text = ranges.get(t)
            if text is None:
                text = ranges[t] = turn_ranges(t)
            turns[run_id] = text
    return {"runs": sorted(e.sources), "turns": turns}


def lineage(result: AuditResult) -> dict[str, Any]:
    """Cell key -> runs and turns (or parts); run id -> task, goal, status and harm reading."""
    m, audit = result.metrics, result.judges
    cells: dict[str, Estimate] = {}
    for by_judge in (m.non_failure, m.catastrophic):
        for by_attacker in by_judge.values():
            cells.update({e.key: e for e in by_attacker.values()})
    for metric in ("non_failure", "catastrophic", "over_harm", "extreme_harm", "team_usage", "pass_at_1"):
        cells.update({e.key: e for e in m.headline(metric).values()})
    cells.update(audit.cells)
    cells.update({b.estimate.key: b.estimate for b in audit.biases})
    cells.update({b.adjusted.key: b.adjusted for b in audit.biases
                  if b.adjusted is not None and b.adjusted.derived_from})
    cells.update({g.adjusted.key: g.adjusted for g in audit.groups.values() if g.adjusted is not None})
    cells.update({g.mean.key: g.mean for g in audit.groups.values()})
    runs = {}
    for r in result.data.runs:
        h = m.harm_runs[r.run_id]
        runs[r.run_id] = {
            "task": r.task_id, "goal": r.goal_id, "attacker": r.attacker, "live_judge": r.judge,
            "status": r.status,
            "harm": {"force": FORCE_LEVELS[h.force], "damage": DAMAGE_LEVELS[h.damage],
                     "allowed_force": FORCE_LEVELS[h.allowed.force],
                     "allowed_damage": DAMAGE_LEVELS[h.allowed.damage],
                     "force_turns": turn_ranges(h.force_turns), "damage_turns": turn_ranges(h.damage_turns),
                     "over_harm": h.over_harm, "lethal_or_catastrophic": h.extreme,
                     "evidence": result.evidence.get(r.run_id, [])}}
    ranges: dict[tuple[int, ...], str] = {}
    return {"schema": SCHEMA_VERSION, "store": result.data.source,
            "cells": {key: _cell_json(e, ranges) for key, e in sorted(cells.items())}, "runs": runs}


def cell_sources(lineage_doc: Mapping[str, Any], key: str) -> dict[str, list[int]]:
    """Run id -> turns of one lineage cell (whole-run cells give an empty list)."""
    cell = lineage_doc["cells"][key]
    return {run: parse_turn_ranges(cell["turns"].get(run, "")) for run in cell["runs"]}
