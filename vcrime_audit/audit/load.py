"""Read a store into an AuditInput; classify attacker actions whose harm reading is missing or stale."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..harm import Lexicon, classify, default_lexicon, reading_digest
from ..outcomes import catastrophic, non_failure
from ..scenario import DAMAGE_LEVELS, FORCE_LEVELS, ScenarioError, load_goal, scenarios_root
from ..store import Store
from .records import (
    FINAL_STATUSES,
    AuditInput,
    GoalLimits,
    JudgmentRow,
    ModelInfo,
    RunRow,
    StoredJudgment,
    TurnRow,
)


class AuditInputError(ValueError):
    """The store cannot be audited as it is; the message names the store, the field and the fix."""


def open_store(path: str | Path, readonly: bool = False) -> Store:
    """An existing store; never creates an empty one by accident. ``readonly``: never written
    (harm readings of stale turns are then computed for this audit only)."""
    path = Path(path)
    if not path.is_file():
        raise AuditInputError(f"{path}: no store at this path; fix: pass --db with a store written by "
                              "`vcrime-audit run` / `replay`, or make one with `vcrime-audit audit synth`")
    return Store(path, readonly=readonly)


def _placeholders(values: Iterable[Any]) -> str:
    return ", ".join("?" for _ in values)


def load_runs(store: Store) -> tuple[list[RunRow], int]:
    """Finished runs and the number of runs still marked running (left out)."""
    rows = store.db.conn.execute(
        "SELECT run_id, task_id, goal_id, attacker, judge, status, synthetic FROM runs "
        "ORDER BY run_id").fetchall()
    runs, unfinished = [], 0
    for run_id, task_id, goal_id, attacker, judge, status, synthetic in rows:
        if status not in FINAL_STATUSES:
            unfinished += 1
            continue
        for name, value in (("task_id", task_id), ("goal_id", goal_id), ("attacker", attacker)):
            if not value:
                raise AuditInputError(f"{store.path}: runs.{name} is empty for run {run_id}; fix: "
                                      "re-run or delete that run")
        runs.append(RunRow(run_id, task_id, goal_id, attacker, judge or "", status, bool(synthetic)))
    return runs, unfinished


def refresh_harm(store: Store, lexicon: Lexicon | None = None) -> dict[tuple[str, int], tuple[int, int]]:
    """Classify attacker turns with no reading or one from another lexicon (default: the default
    one, compiled only when some turn needs it): (run, turn) -> (force, damage), also written to
    the store unless it is open read-only."""
    conn = store.db.conn
    stale = conn.execute(
        "SELECT t.run_id, t.turn, t.verb, t.targets, t.description FROM turns t "
        "LEFT JOIN harm h ON h.run_id = t.run_id AND h.turn = t.turn "
        "WHERE t.verb IS NOT NULL AND (h.lexicon_digest IS NULL OR h.lexicon_digest != ?)",
        [reading_digest(lexicon)]).fetchall()
    if stale and lexicon is None:
        lexicon = default_lexicon()
    rows = []
    for run_id, turn, verb, targets, description in stale:
        try:
            target_list = json.loads(targets) if targets else []
        except json.JSONDecodeError:
            raise AuditInputError(f"{store.path}: turns.targets of run {run_id} turn {turn} is not "
                                  "JSON; fix: re-record that run") from None
        reading = classify({"verb": verb, "targets": target_list, "description": description or ""},
                           lexicon)
        rows.append((run_id, turn, reading.force, reading.damage, lexicon.digest))
    if rows and not store.readonly:
        with conn:
            conn.executemany("INSERT OR REPLACE INTO harm (run_id, turn, force, damage, lexicon_digest) "
                             "VALUES (?, ?, ?, ?, ?)", rows)
    return {(run_id, turn): (force, damage) for run_id, turn, force, damage, _ in rows}


def load_turns(store: Store, run_ids: set[str],
               fresh: dict[tuple[str, int], tuple[int, int]] | None = None) -> list[TurnRow]:
    """Attacker turns with their harm reading (``fresh`` readings win over stored ones)."""
    fresh = fresh or {}
    rows = store.db.conn.execute(
        "SELECT t.run_id, t.turn, t.actor_is_leader, h.force, h.damage FROM turns t "
        "LEFT JOIN harm h ON h.run_id = t.run_id AND h.turn = t.turn "
        "WHERE t.verb IS NOT NULL ORDER BY t.run_id, t.turn").fetchall()
    out = []
    for r, t, leader, force, damage in rows:
        force, damage = fresh.get((r, t), (force, damage))
        if r in run_ids and force is not None:
            out.append(TurnRow(r, t, bool(leader), force, damage))
    return out


def _rates(store: Store, run_id: str, turn: int, judge: str, distribution: str | None) -> tuple[float, float]:
    try:
        outcomes = json.loads(distribution or "")
    except json.JSONDecodeError:
        raise AuditInputError(f"{store.path}: judgments.distribution of run {run_id} turn {turn} judge "
                              f"{judge} is missing or not JSON; fix: re-judge that turn") from None
    return non_failure(outcomes), catastrophic(outcomes)


def read_judgments(store: Store) -> list[StoredJudgment]:
    """Every row of the judgments table, in primary-key order: read once for the metrics
    (:func:`load_judgments`) and the follow-ups (``followups_load.load_followup_rows``)."""
    return store.db.conn.execute(
        "SELECT run_id, turn, judge, source, risky, non_failure, catastrophic, "
        "CASE WHEN non_failure IS NULL OR catastrophic IS NULL THEN distribution END "
        "FROM judgments ORDER BY run_id, turn, judge").fetchall()


def load_judgments(store: Store, attacker_turns: set[tuple[str, int]],
                   stored: Iterable[StoredJudgment] | None = None) -> list[JudgmentRow]:
    """Judgments of attacker turns (every source); rates from the stored columns, or the
    distribution when absent. ``stored``: :func:`read_judgments` of ``store``, when already read."""
    out = []
    append, new = out.append, tuple.__new__
    for run_id, turn, judge, _, risky, nf, cat, distribution in (
            read_judgments(store) if stored is None else stored):
        if (run_id, turn) not in attacker_turns:
            continue
        if distribution is not None:
            nf, cat = _rates(store, run_id, turn, judge, distribution)
        append(new(JudgmentRow, (run_id, turn, judge, bool(risky), float(nf), float(cat))))
    return out


def load_goals(goal_ids: Iterable[str], root: Path | None = None) -> dict[str, GoalLimits]:
    root = root or scenarios_root()
    goals = {}
    for goal_id in sorted(set(goal_ids)):
        path = root / "goals" / f"{goal_id}.yaml"
        if not path.is_file():
            raise AuditInputError(f"{path}: goal '{goal_id}' (runs.goal_id) has no goal file, so its "
                                  "allowed force and damage are unknown; fix: add the goal file or "
                                  "point VCRIME_SCENARIOS at the scenarios the runs used")
        try:
            goal = load_goal(path)
        except ScenarioError as exc:
            raise AuditInputError(str(exc)) from None
        goals[goal_id] = GoalLimits(FORCE_LEVELS.index(goal.allowed_force),
                                    DAMAGE_LEVELS.index(goal.allowed_damage))
    return goals


def load_models(store: Store, names: Iterable[str], root: Path | None = None) -> dict[str, ModelInfo]:
    """Family and vendor per model: the store's `models` table first, then local_models/.
    A model found in neither is left out (its vendor is unknown)."""
    from ..models import ModelError, get_model

    columns = {c.name for c in store.db["models"].columns}
    fingerprint = "fingerprint" if "fingerprint" in columns else "''"
    known = {name: ModelInfo(family, vendor, fp or "") for name, family, vendor, fp in
             store.db.conn.execute(f"SELECT name, family, vendor, {fingerprint} FROM models").fetchall()}
    out = {}
    for name in sorted(set(names)):
        if name in known:
            out[name] = known[name]
            continue
        try:
            entry = get_model(name, root)
        except ModelError:
            continue
        out[name] = ModelInfo(entry.family, entry.vendor)
    return out


def load_meta(store: Store) -> dict[str, str]:
    return dict(store.db.conn.execute("SELECT key, value FROM meta").fetchall())


def load_audit_input(store: Store, *, lexicon: Lexicon | None = None, scenarios: Path | None = None,
                     models_root: Path | None = None,
                     judgments: Iterable[StoredJudgment] | None = None) -> AuditInput:
    """The store as committed at one moment (:meth:`Store.one_moment`; a study may be writing it).
    ``judgments``: :func:`read_judgments` of ``store`` at that moment, when already read."""
    with store.one_moment():
        runs, unfinished = load_runs(store)
        if not runs:
            raise AuditInputError(f"{store.path}: no finished runs to audit ({unfinished} still "
                                  "running); fix: finish or record runs first")
        fresh = refresh_harm(store, lexicon)
        run_ids = {r.run_id for r in runs}
        turns = load_turns(store, run_ids, fresh)
        rows = load_judgments(store, {(t.run_id, t.turn) for t in turns}, judgments)
        names = {r.attacker for r in runs} | {j.judge for j in rows}
        models, meta = load_models(store, names, models_root), load_meta(store)
    return AuditInput(
        runs=tuple(runs), turns=tuple(turns), judgments=tuple(rows),
        goals=load_goals((r.goal_id for r in runs), scenarios), models=models, meta=meta,
        source=str(store.path), unfinished_runs=unfinished, reclassified_turns=len(fresh),
        lexicon_digest=reading_digest(lexicon))


def action_texts(store: Store, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
    """verb, targets and description of the given attacker turns (for evidence in lineage)."""
    wanted = set(keys)
    runs = sorted({run_id for run_id, _ in wanted})
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for start in range(0, len(runs), 500):
        chunk = runs[start:start + 500]
        for run_id, turn, verb, targets, description in store.db.conn.execute(
                f"SELECT run_id, turn, verb, targets, description FROM turns WHERE run_id IN "
                f"({_placeholders(chunk)})", chunk):
            if (run_id, turn) in wanted:
                out[(run_id, turn)] = {"verb": verb, "targets": json.loads(targets or "[]"),
                                       "description": description or ""}
    return out
