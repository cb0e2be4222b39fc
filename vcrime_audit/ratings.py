"""Key turns for people to rate, and their ratings (table ``human_ratings``).

A key turn is one where a progress checkpoint or a critical failure became met, the Judge
flagged the action risky, or the sampled outcome was a catastrophic failure.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass
from typing import Any

from .statuses import RUN_OUTCOMES
from .store import Store

DEFAULT_RUNS, DEFAULT_TURNS, DEFAULT_SEED = 25, 200, 0
SCORES = (1, 2, 3, 4, 5)
NOTE_LIMIT = 500


@dataclass(frozen=True)
class KeyTurn:
    run_id: str
    turn: int
    why: tuple[str, ...]


def key_turns_of_run(store: Store, run_id: str) -> list[KeyTurn]:
    risky = {r["turn"] for r in store.rows("judgments", run_id, "source = 'live' AND risky = 1")}
    out: list[KeyTurn] = []
    checkpoints: set[str] = set()
    failures: set[str] = set()
    for row in store.rows("turns", run_id):
        why = []
        met = set(json.loads(row["checkpoints_met"] or "[]"))
        failed = set(json.loads(row["failures_met"] or "[]"))
        if met - checkpoints:
            why.append("checkpoint")
        if failed - failures:
            why.append("critical failure")
        if row["turn"] in risky:
            why.append("risky")
        if row["outcome_type"] == "catastrophic_failure":
            why.append("catastrophic draw")
        checkpoints, failures = checkpoints | met, failures | failed
        if why and row["verb"] is not None:
            out.append(KeyTurn(run_id, row["turn"], tuple(why)))
    return out


def finished_runs(store: Store) -> list[str]:
    return [r["run_id"] for r in store.runs() if r["status"] in RUN_OUTCOMES and r["status"] != "error"]


def select_key_turns(store: Store, runs: list[str] | None = None, *, n_runs: int = DEFAULT_RUNS,
                     max_turns: int = DEFAULT_TURNS, seed: int = DEFAULT_SEED) -> list[KeyTurn]:
    """The key turns of ``runs`` (default: a seeded sample of ``n_runs`` finished runs), at most
    ``max_turns`` of them (a seeded sample, kept in run and turn order)."""
    if runs:
        unknown = [r for r in runs if store.run(r) is None]
        if unknown:
            raise ValueError(f"--runs: not in {store.path}: {', '.join(unknown)}; see `vcrime-audit runs`")
        chosen = list(runs)
    else:
        pool = sorted(finished_runs(store))
        chosen = sorted(random.Random(seed).sample(pool, min(n_runs, len(pool))))
    turns = [k for run_id in chosen for k in key_turns_of_run(store, run_id)]
    if len(turns) > max_turns:
        keep = set(random.Random(seed).sample(range(len(turns)), max_turns))
        turns = [k for i, k in enumerate(turns) if i in keep]
    return turns


def save_rating(store: Store, rater: str, key: KeyTurn, judge_score: int, world_manager_score: int,
                note: str = "", seconds: float | None = None) -> None:
    if judge_score not in SCORES or world_manager_score not in SCORES:
        raise ValueError(f"scores must be one of {SCORES}; got {judge_score}, {world_manager_score}")
    row = {"rater": rater, "run_id": key.run_id, "turn": key.turn, "judge_score": judge_score,
           "world_manager_score": world_manager_score, "note": note[:NOTE_LIMIT],
           "why_key": ", ".join(key.why), "seconds": seconds,
           "rated_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    with store.db.conn:
        store._insert("human_ratings", [row], replace=True)


def rated(store: Store, rater: str) -> set[tuple[str, int]]:
    return {(r, t) for r, t in store.db.conn.execute(
        "SELECT run_id, turn FROM human_ratings WHERE rater = ?", [rater])}


def all_ratings(store: Store) -> list[dict[str, Any]]:
    """Every rating with its run's task."""
    cur = store.db.conn.execute(
        "SELECT h.rater, h.run_id, h.turn, h.judge_score, h.world_manager_score, r.task_id "
        "FROM human_ratings h JOIN runs r USING (run_id) ORDER BY h.rater, h.run_id, h.turn")
    names = [c[0] for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur]
