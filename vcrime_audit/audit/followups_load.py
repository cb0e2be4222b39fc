"""Read the follow-up tables (re-judging, annotation, interrogation) into plain rows for the audit."""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from ..store import Store
from .load import read_judgments
from .records import FINAL_STATUSES, StoredJudgment


class RunKey(NamedTuple):
    run_id: str
    task_id: str
    attacker: str


class RejudgedTurn(NamedTuple):
    """A re-judged turn beside the run's live judgment of it (None when the live judge failed)."""

    run_id: str
    turn: int
    judge: str
    live_judge: str
    live_non_failure: float | None
    live_risky: bool | None
    non_failure: float
    risky: bool


class AnnotationScore(NamedTuple):
    annotators: str
    run_id: str
    annotator: str
    dimension: str
    round: int
    score: int


class AnnotationResult(NamedTuple):
    annotators: str
    run_id: str
    dimension: str
    status: str
    score: int | None


class Interrogation(NamedTuple):
    run_id: str
    model: str
    condition: str
    valid: bool
    refused: bool
    admission: bool
    credible: bool


@dataclass(frozen=True)
class FollowupRows:
    runs: dict[str, RunKey]
    rejudged: tuple[RejudgedTurn, ...]
    rejudge_failed: dict[str, int]
    """Judge -> re-judged turns it gave no usable answer for (and has no re-judgment of)."""
    scores: tuple[AnnotationScore, ...]
    results: tuple[AnnotationResult, ...]
    interrogations: tuple[Interrogation, ...]
    fingerprints: dict[str, str] = field(default_factory=dict)
    """Model name -> weights fingerprint digest ('' or absent when unknown)."""


def _sql_order(value: object) -> tuple:
    """A sort key that orders values of mixed types as SQLite's ORDER BY does (NULL, numbers,
    text, blobs; text by code point, as the BINARY collation orders UTF-8)."""
    if value is None:
        return (0,)
    if isinstance(value, int | float):
        return (1, value)
    return (2, value) if isinstance(value, str) else (3, value)


def rejudged_turns(judgments: Iterable[StoredJudgment], runs: Container[str]) -> list[RejudgedTurn]:
    """Each re-judgment of a turn of ``runs`` beside every live judgment of that turn (None when
    there is none), ordered by re-judge, run and turn: the rows of ``judgments j LEFT JOIN
    judgments l ON l.run_id = j.run_id AND l.turn = j.turn AND l.source = 'live' WHERE j.source =
    'rejudge' ORDER BY j.judge, j.run_id, j.turn``, from rows already read in primary-key order."""
    live: dict[tuple[str, int], list[StoredJudgment]] = {}
    by_judge: dict[object, list[StoredJudgment]] = {}
    for row in judgments:
        run_id, turn, judge, source = row[:4]
        if source == "live":
            if run_id is not None and turn is not None:  # NULL = NULL is not true in SQL
                live.setdefault((run_id, turn), []).append(row)
        elif source == "rejudge" and run_id in runs:
            by_judge.setdefault(judge, []).append(row)  # in run and turn order, as read
    rejudges = [row for judge in sorted(by_judge, key=_sql_order) for row in by_judge[judge]]
    new, unmatched = tuple.__new__, ((None,) * 8,)  # LEFT JOIN: an all-NULL live row
    return [new(RejudgedTurn, (run_id, turn, judge, lv[2] or "", lv[5],
                               None if lv[4] is None else bool(lv[4]), nf, bool(risky)))
            for run_id, turn, judge, _, risky, nf, *_ in rejudges
            for lv in live.get((run_id, turn), unmatched)]


def load_followup_rows(store: Store, judgments: Iterable[StoredJudgment] | None = None) -> FollowupRows:
    """Rows of finished runs only, like the rest of the audit, read at one moment. ``judgments``:
    ``load.read_judgments`` of ``store`` at that moment, when already read."""
    with store.one_moment():
        return with_rejudged(read_followup_tables(store),
                             read_judgments(store) if judgments is None else judgments)


def with_rejudged(tables: FollowupRows, judgments: Iterable[StoredJudgment]) -> FollowupRows:
    """``tables`` with the re-judged turns of its runs, from the judgments read with them."""
    return replace(tables, rejudged=tuple(rejudged_turns(judgments, tables.runs)))


def read_followup_tables(store: Store) -> FollowupRows:
    """The follow-up tables' rows of finished runs; the re-judged turns, which come from the
    judgments, are left to :func:`with_rejudged`."""
    conn = store.db.conn
    runs = {r: RunKey(r, task, attacker) for r, task, attacker, status in conn.execute(
        "SELECT run_id, task_id, attacker, status FROM runs") if status in FINAL_STATUSES}
    failed = dict(conn.execute(
        "SELECT judge, COUNT(*) FROM (SELECT DISTINCT run_id, turn, judge FROM rejudged_turns r "
        "WHERE status = 'failed' AND NOT EXISTS (SELECT 1 FROM judgments j WHERE j.source = "
        "'rejudge' AND j.run_id = r.run_id AND j.turn = r.turn AND j.judge = r.judge)) "
        "GROUP BY judge").fetchall())
    scores = [AnnotationScore(*row) for row in conn.execute(
        "SELECT annotators, run_id, annotator, dimension, round, score FROM annotations "
        "ORDER BY annotators, run_id, dimension, round, annotator") if row[1] in runs]
    results = [AnnotationResult(*row) for row in conn.execute(
        "SELECT annotators, run_id, dimension, status, score FROM annotation_results "
        "ORDER BY annotators, run_id, dimension") if row[1] in runs]
    interrogations = [Interrogation(r, m, c, bool(v), bool(f), bool(a), bool(cr))
                      for r, m, c, v, f, a, cr in conn.execute(
                          "SELECT run_id, model, condition, valid, refused, admission, credible "
                          "FROM interrogations ORDER BY model, condition, run_id") if r in runs]
    columns = {c.name for c in store.db["models"].columns}
    fingerprints = dict(conn.execute("SELECT name, COALESCE(fingerprint, '') FROM models").fetchall()
                        if "fingerprint" in columns else [])
    return FollowupRows(runs, (), failed, tuple(scores), tuple(results), tuple(interrogations),
                        fingerprints)
