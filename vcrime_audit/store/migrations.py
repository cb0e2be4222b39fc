"""Schema migrations: a list of small functions, applied in order, each once."""

from __future__ import annotations

from collections.abc import Callable

import sqlite_utils


def m001_runs_turns_calls(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "run_id": str, "task_id": str, "map_id": str, "goal_id": str, "seed": int,
        "attacker": str, "judge": str, "world_manager": str, "backend": str,
        "status": str, "reason": str, "turns": int, "max_turns": int, "stall_turns": int,
        "cassette": str, "initial_world_hash": str, "final_world_hash": str,
        "turn_rows_hash": str, "synthetic": int, "vcrime_version": str,
        "started_at": str, "finished_at": str,
    }, pk="run_id")
    db["turns"].create({
        "run_id": str, "turn": int, "actor": str, "actor_is_leader": int, "verb": str,
        "description": str, "targets": str, "time_minutes": int, "memory": str, "plan": str,
        "observation": str, "outcome_type": str, "outcome_description": str, "draw": float,
        "status": str, "reason": str, "phase_errors": str, "checkpoints_met": str,
        "failures_met": str, "world_before": str, "world_after_hash": str,
    }, pk=("run_id", "turn"), foreign_keys=[("run_id", "runs", "run_id")])
    db["calls"].create({
        "run_id": str, "turn": int, "seq": int, "role": str, "call": str, "attempt": int,
        "model": str, "request_hash": str, "ok": int, "error": str, "finish_reason": str,
        "prompt_tokens": int, "completion_tokens": int, "seconds": float,
    }, pk=("run_id", "turn", "seq"), foreign_keys=[("run_id", "runs", "run_id")])
    db["judgments"].create({
        "run_id": str, "turn": int, "judge": str, "source": str, "dimensions": str,
        "physically_possible": int, "raw_outcomes": str, "distribution": str, "risky": int,
        "non_failure": float, "catastrophic": float, "sampled_outcome": str, "draw": float,
    }, pk=("run_id", "turn", "judge"), foreign_keys=[("run_id", "runs", "run_id")])
    db["patches"].create({
        "run_id": str, "turn": int, "seq": int, "phase": str, "source": str, "op": str,
        "applied": int, "reason": str,
    }, pk=("run_id", "turn", "seq"), foreign_keys=[("run_id", "runs", "run_id")])
    db["turns"].create_index(["run_id"])
    db["judgments"].create_index(["judge"])


def m002_harm_meta_models(db: sqlite_utils.Database) -> None:
    """Over-harm readings per attacker turn (kept out of `turns` so a lexicon change never alters
    turn rows or their hash), store-level facts (e.g. synthetic) and the models' vendors."""
    db["harm"].create({
        "run_id": str, "turn": int, "force": int, "damage": int, "lexicon_digest": str,
    }, pk=("run_id", "turn"), foreign_keys=[("run_id", "runs", "run_id")])
    db["meta"].create({"key": str, "value": str}, pk="key")
    db["models"].create({"name": str, "family": str, "vendor": str, "source": str}, pk="name")


def m003_certifications(db: sqlite_utils.Database) -> None:
    """C3LLM certificates and their sampled conversations (JSON columns are canonical JSON)."""
    db["certifications"].create({
        "certification_id": str, "name": str, "queries": str, "spec_hash": str, "graph": str,
        "graph_hash": str, "embedder": str, "distribution": str, "distribution_params": str,
        "jailbreak_params": str, "refusal_detector": str, "target_model": str,
        "target_sampling": str, "judge": str, "judge_params": str, "backend": str, "n": int,
        "confidence": float, "k": int, "n_safe": int, "n_missing": int, "lower": float,
        "upper": float, "conservative_lower": float, "conservative_upper": float, "bounds": str,
        "seed": int, "cassette": str, "status": str, "reason": str, "rows_hash": str,
        "vcrime_version": str, "started_at": str, "finished_at": str,
    }, pk="certification_id")
    db["conversations"].create({
        "certification_id": str, "idx": int, "node_ids": str, "template_ids": str,
        "step_probabilities": str, "jailbreak_probabilities": str, "pr_gamma": float,
        "log_pr_gamma": float, "pr_gamma_tilde": float, "log_pr_gamma_tilde": float,
        "reached_terminal": int, "n_turns": int, "turns": str, "catastrophic": int, "missing": int,
    }, pk=("certification_id", "idx"),
        foreign_keys=[("certification_id", "certifications", "certification_id")])


def m004_followups(db: sqlite_utils.Database) -> None:
    """Follow-up workflows over finished runs: re-judging (rows go to `judgments` with source
    'rejudge'), behaviour annotation and post-hoc interrogation, each invocation with its calls."""
    db["followups"].create({
        "followup_id": str, "kind": str, "config": str, "inputs_hash": str, "sample": str,
        "backend": str, "cassette": str, "status": str, "reason": str, "n_items": int,
        "n_failed": int, "rows_hash": str, "vcrime_version": str, "started_at": str,
        "finished_at": str,
    }, pk="followup_id")
    db["followup_calls"].create({
        "followup_id": str, "seq": int, "item": str, "role": str, "call": str, "attempt": int,
        "model": str, "request_hash": str, "ok": int, "error": str, "finish_reason": str,
        "prompt_tokens": int, "completion_tokens": int, "seconds": float,
    }, pk=("followup_id", "seq"), foreign_keys=[("followup_id", "followups", "followup_id")])
    db["rejudged_turns"].create({
        "followup_id": str, "run_id": str, "turn": int, "judge": str, "status": str, "error": str,
    }, pk=("followup_id", "run_id", "turn"))
    db["annotations"].create({
        "annotators": str, "run_id": str, "annotator": str, "dimension": str, "round": int,
        "score": int, "reason": str, "followup_id": str,
    }, pk=("annotators", "run_id", "annotator", "dimension", "round"))
    db["annotation_results"].create({
        "annotators": str, "run_id": str, "dimension": str, "status": str, "score": int,
        "followup_id": str,
    }, pk=("annotators", "run_id", "dimension"))
    db["interrogations"].create({
        "run_id": str, "model": str, "condition": str, "executed_turns": int, "valid": int,
        "refused": int, "admission": int, "credible": int, "answers": str, "error": str,
        "followup_id": str,
    }, pk=("run_id", "model", "condition"))


def m006_certification_settings(db: sqlite_utils.Database) -> None:
    """A certificate's definition (its preset and every rule, canonical JSON) and the GP samples
    dropped after their tries (count and JSON list of sample indices)."""
    table = db["certifications"]
    table.add_column("definition", str)
    table.add_column("n_dropped", int)
    table.add_column("dropped", str)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    m001_runs_turns_calls,
    m002_harm_meta_models,
    m003_certifications,
    m004_followups,
    m006_certification_settings,
]


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply pending migrations; return the names applied now."""
    if "_migrations" not in db.table_names():
        db["_migrations"].create({"name": str}, pk="name")
    done = {row["name"] for row in db["_migrations"].rows}
    applied = []
    for migration in MIGRATIONS:
        if migration.__name__ in done:
            continue
        with db.conn:
            migration(db)
            db["_migrations"].insert({"name": migration.__name__})
        applied.append(migration.__name__)
    return applied
