"""Datasette metadata for a vcrime-audit store: table and column descriptions, canned queries.

``metadata.yaml`` next to this file is written by :func:`metadata` for the default store name
(``runs/vcrime.sqlite`` is database ``vcrime``); for a store with another file name write one with
``python -m vcrime_audit.datasette --database NAME > metadata.yaml``. Goal allowances come from
``scenarios/goals/`` (the store keeps level indices only), so the over-harm query carries them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SHIPPED = Path(__file__).with_name("metadata.yaml")
DEFAULT_DATABASE = "vcrime"

TABLES: dict[str, tuple[str, dict[str, str]]] = {
    "runs": ("One row per episode (sandbox run).", {
        "run_id": "<task>-s<seed>-<hash of roles, backend and limits>",
        "status": "won | lost | stalled | max_turns | error | running",
        "reason": "Why the run ended",
        "backend": "Engine that served the models (local, openai, transformers, vllm)",
        "cassette": "Cassette file with every model call of the run",
        "turn_rows_hash": "Hash of the run's turns, live judgments and patches (replay check)"}),
    "turns": ("One row per turn: the attacker's plan and action, the sampled outcome.", {
        "verb": "Action verb chosen by the attacker",
        "outcome_type": "Outcome sampled from the judge's distribution",
        "draw": "Uniform draw in [0, 1) that picked the outcome (seeded)",
        "world_before": "Canonical JSON of the world at the start of the turn"}),
    "calls": ("One row per model request (retries included).", {
        "request_hash": "Hash of the canonical request (matches the cassette's call)",
        "ok": "1 when the answer parsed and passed the checks",
        "seconds": "Seconds the model took (as recorded)"}),
    "judgments": ("A judge's assessment of a turn (live, or re-judged later).", {
        "source": "live (during the run) or rejudge",
        "non_failure": "Probability mass the judge put on non-failure outcomes",
        "catastrophic": "Probability of catastrophic failure",
        "risky": "1 when the judge marked the action risky"}),
    "patches": ("World Manager and engine operations, applied or dropped with the reason.", {}),
    "harm": ("Over-harm classifier reading per attacker turn (level indices).", {
        "force": "0 none, 1 threat, 2 physical, 3 armed_serious, 4 lethal",
        "damage": "0 none, 1 minor, 2 significant, 3 major, 4 catastrophic"}),
    "meta": ("Store-level facts (e.g. synthetic).", {}),
    "models": ("Family and vendor of the models used.", {}),
    "certifications": ("C3LLM certificates (vcrime-audit certify).", {}),
    "conversations": ("Sampled conversations of a certificate.", {}),
    "followups": ("Re-judging, annotation and interrogation invocations.", {}),
    "followup_calls": ("Model requests of the follow-ups.", {}),
    "rejudged_turns": ("Turns a follow-up re-judged.", {}),
    "annotations": ("Behaviour annotations per annotator and round.", {}),
    "annotation_results": ("Reconciled annotation per run and dimension.", {}),
    "interrogations": ("Post-hoc interrogation answers per run and framing condition.", {}),
    "determinism": ("Recorded calls re-sent to a live backend (vcrime-audit determinism).", {
        "identical": "1 when the live answer equals the recorded one byte for byte",
        "first_difference": "Offset of the first differing byte (UTF-8), when diverged",
        "fingerprint_match": "1 when the live backend fingerprint equals the recorded one"}),
}


def goal_limits() -> list[tuple[str, int, int]]:
    """(goal id, allowed force index, allowed damage index) from scenarios/goals/."""
    from ..scenario import DAMAGE_LEVELS, FORCE_LEVELS, load_goal, scenarios_root

    return [(g.stem, FORCE_LEVELS.index(goal.allowed_force), DAMAGE_LEVELS.index(goal.allowed_damage))
            for g in sorted((scenarios_root() / "goals").glob("*.yaml")) for goal in [load_goal(g)]]


def _queries() -> dict[str, dict[str, Any]]:
    values = ", ".join(f"('{g}', {f}, {d})" for g, f, d in goal_limits())
    return {
        "runs_by_status": {
            "title": "Runs by status",
            "description": "How many runs ended in each status, per attacker.",
            "sql": "SELECT status, attacker, COUNT(*) AS runs, SUM(turns) AS turns FROM runs "
                   "GROUP BY status, attacker ORDER BY status, attacker"},
        "over_harm_turns": {
            "title": "Over-harm turns with their evidence",
            "description": "Attacker turns whose force or damage level is above what the run's "
                           "goal allows, with the action text the classifier read.",
            "sql": f"WITH goal_limits(goal_id, allowed_force, allowed_damage) AS (VALUES {values}) "
                   "SELECT r.run_id, r.attacker, r.goal_id, t.turn, h.force, g.allowed_force, "
                   "h.damage, g.allowed_damage, t.actor, t.verb, t.description, t.targets "
                   "FROM harm h JOIN runs r ON r.run_id = h.run_id "
                   "JOIN turns t ON t.run_id = h.run_id AND t.turn = h.turn "
                   "JOIN goal_limits g ON g.goal_id = r.goal_id "
                   "WHERE h.force > g.allowed_force OR h.damage > g.allowed_damage "
                   "ORDER BY r.run_id, t.turn"},
        "run_transcript": {
            "title": "One run's transcript",
            "description": "Every turn of a run: action, live judgment and sampled outcome.",
            "sql": "SELECT t.turn, t.actor, t.verb, t.description, t.targets, j.judge, "
                   "j.non_failure, j.risky, t.draw, t.outcome_type, t.outcome_description, t.status "
                   "FROM turns t LEFT JOIN judgments j ON j.run_id = t.run_id AND j.turn = t.turn "
                   "AND j.source = 'live' WHERE t.run_id = :run_id ORDER BY t.turn"},
        "judge_disagreements": {
            "title": "Judge disagreements",
            "description": "Turns two judges scored at least :min_gap apart in non-failure "
                           "probability, or on which they disagree about risk.",
            "sql": "SELECT a.run_id, a.turn, a.judge AS judge_a, b.judge AS judge_b, "
                   "a.non_failure AS non_failure_a, b.non_failure AS non_failure_b, "
                   "ABS(a.non_failure - b.non_failure) AS gap, a.risky AS risky_a, "
                   "b.risky AS risky_b FROM judgments a JOIN judgments b ON a.run_id = b.run_id "
                   "AND a.turn = b.turn AND a.judge < b.judge "
                   "WHERE ABS(a.non_failure - b.non_failure) >= CAST(:min_gap AS REAL) "
                   "OR a.risky != b.risky ORDER BY gap DESC, a.run_id, a.turn"},
    }


def metadata(database: str = DEFAULT_DATABASE) -> dict[str, Any]:
    tables = {name: {"description": text, **({"columns": cols} if cols else {})}
              for name, (text, cols) in TABLES.items()}
    return {"title": "vcrime-audit store",
            "description": "Runs, turns, judgments and follow-ups of vcrime-audit "
                           "(see the project README for every definition).",
            "databases": {database: {"tables": tables, "queries": _queries()}}}


def render(database: str = DEFAULT_DATABASE) -> str:
    import yaml

    head = ("# Datasette metadata for a vcrime-audit store. Written by\n"
            "# `python -m vcrime_audit.datasette` (a test checks it is current); do not edit.\n")
    return head + yaml.safe_dump(metadata(database), sort_keys=False, width=100, allow_unicode=True)
