"""Schema migrations: a list of small functions, applied in order, each once."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from .sqlite_utils_without_numpy import sqlite_utils


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


def m005_writers_and_crashes(db: sqlite_utils.Database) -> None:
    """Who is writing a job (``host:pid``, so a second writer fails cleanly), and status
    ``crashed`` apart from the outcome ``model_error``: the old ``error`` was a model error when
    the run's hash was written, else a crash."""
    for table in ("runs", "certifications", "followups"):
        db[table].add_column("writer", str)
    db.execute("UPDATE runs SET status = 'model_error' WHERE status = 'error' "
               "AND turn_rows_hash IS NOT NULL")
    db.execute("UPDATE runs SET status = 'crashed' WHERE status = 'error'")
    db.execute("UPDATE certifications SET status = 'crashed' WHERE status = 'error'")
    db.execute("UPDATE followups SET status = 'crashed' WHERE status = 'error'")


def m009_model_fingerprints(db: sqlite_utils.Database) -> None:
    """The digest of each model's weights fingerprint (as its backend reports it), so audits can
    tell that two registry names are one model; '' where unknown."""
    if "fingerprint" not in db["models"].columns_dict:
        db["models"].add_column("fingerprint", str)


def m007_human_ratings(db: sqlite_utils.Database) -> None:
    """People's 1-5 ratings of the Judge's outcome distribution and the World Manager's update on
    key turns (`vcrime-audit rate`); one row per rater and turn, a re-rating replaces it."""
    db["human_ratings"].create({
        "rater": str, "run_id": str, "turn": int, "judge_score": int, "world_manager_score": int,
        "note": str, "why_key": str, "seconds": float, "rated_at": str,
    }, pk=("rater", "run_id", "turn"))


def m008_determinism(db: sqlite_utils.Database) -> None:
    """Determinism self-test results: one row per recorded call sent to a live backend again
    (`vcrime-audit determinism`, `study --check-determinism`)."""
    db["determinism"].create({
        "cassette": str, "call_index": int, "backend": str, "run_id": str, "seed": int,
        "role": str, "call": str, "model": str, "identical": int, "first_difference": int,
        "recorded_bytes": int, "live_bytes": int, "fingerprint_match": int,
        "live_fingerprint": str, "checked_at": str,
    }, pk=("cassette", "call_index", "backend"))
    db["determinism"].create_index(["run_id"])


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
    m005_writers_and_crashes,
    m006_certification_settings,
    m007_human_ratings,
    m008_determinism,
    m009_model_fingerprints,
]


class NewerSchemaError(Exception):
    """The store was migrated by a newer vcrime-audit: names of the migrations unknown here."""

    def __init__(self, unknown: list[str]) -> None:
        self.unknown = unknown
        super().__init__(", ".join(unknown))


def applied_migrations(conn: sqlite3.Connection) -> set[str] | None:
    """Names in ``_migrations``, or None when the store has no such table (a new file)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                          "'_migrations'").fetchone()
    if not exists:
        return None
    names = [row[0] for row in conn.execute("SELECT name FROM _migrations")]
    damaged = [name for name in names if not isinstance(name, str)]
    if damaged:  # a page overwritten: no version of vcrime-audit wrote these
        raise sqlite3.DatabaseError(f"_migrations holds a name that is not text: {damaged[0]!r}")
    return set(names)


def pending_migrations(done: set[str] | None) -> list[Callable[[sqlite_utils.Database], None]]:
    done = done or set()
    unknown = sorted(done - {m.__name__ for m in MIGRATIONS})
    if unknown:
        raise NewerSchemaError(unknown)
    return [m for m in MIGRATIONS if m.__name__ not in done]


def _create_from_snapshot(conn: sqlite3.Connection) -> None:
    """A new store: every migration's tables at once, from the schema snapshot."""
    from .snapshot import snapshot_statements

    for statement in snapshot_statements():
        conn.execute(statement)


def migrate(db: sqlite_utils.Database) -> list[str]:
    """Apply pending migrations; return the names applied now.

    All pending migrations run in one ``BEGIN EXCLUSIVE`` transaction, and what is applied is
    read again once the lock is held, so processes opening a new store at once never race: one
    migrates, the others wait (busy timeout) and then find nothing to do. A store that holds a
    migration this code does not know is refused with :class:`NewerSchemaError`. A new store
    is created from the schema snapshot (``schema.sql``), which a test holds equal to what the
    migrations build.
    """
    conn = db.conn
    if not pending_migrations(applied_migrations(conn)):
        return []
    hold = getattr(conn, "hold", None)
    if conn.in_transaction:
        conn.commit()
    conn.execute("BEGIN EXCLUSIVE")
    try:
        if hold is not None:
            conn.hold = True
        done = applied_migrations(conn)
        if done is None:
            conn.execute("CREATE TABLE [_migrations] ([name] TEXT PRIMARY KEY)")
        pending = pending_migrations(done)
        if done is None:
            _create_from_snapshot(conn)
        else:
            for migration in pending:
                migration(db)
        conn.executemany("INSERT INTO [_migrations] ([name]) VALUES (?)",
                         [[migration.__name__] for migration in pending])
    except BaseException:
        if hold is not None:
            conn.hold = False
        conn.rollback()
        raise
    if hold is not None:
        conn.hold = False
    conn.commit()
    return [m.__name__ for m in pending]
