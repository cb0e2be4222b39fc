"""Combine stores and cassettes made by shards of a study."""

from __future__ import annotations

import filecmp
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .cassette.persist import copy_final
from .collector import release_frames
from .statuses import RUN_OUTCOMES
from .store import Store, turn_rows_hash
from .store.db import FOLLOWUP_RUN_TABLES, ROW_ORDER, RUN_TABLES
from .store.errors import StoreError, store_error
from .store.integrity_check import integrity_check_lines


@dataclass
class MergeReport:
    runs_added: list[str] = field(default_factory=list)
    runs_same: list[str] = field(default_factory=list)
    runs_replaced: list[str] = field(default_factory=list)
    """Runs whose unfinished copy (running, crashed) in the target the source's other copy replaced."""
    runs_older: list[str] = field(default_factory=list)
    """Runs the target holds finished whose source copy is unfinished: the target's is kept."""
    cassettes_copied: int = 0
    cassettes_same: int = 0


def _identity(store: Store, run_id: str) -> tuple[dict, str]:
    """What must agree for two copies of a run to be the same run: its settings and trajectory."""
    run = store.run(run_id) or {}
    stable = {k: v for k, v in run.items()
              if k not in ("started_at", "finished_at", "cassette", "turn_rows_hash")}
    return stable, turn_rows_hash(store, run_id)


RUNS_PER_TRANSACTION = 64
"""Runs merged per transaction: a commit per run cost ~12 ms (most of a paper-size merge); a
kill mid-merge loses at most these runs, which merging again adds (a merge is idempotent)."""


def _columns(store: Store, table: str) -> list[str]:
    return [row[1] for row in store.db.conn.execute(f"PRAGMA table_info([{table}])")]


def _copy_rows(source: Store, target: Store, run_id: str, tables: list[tuple[str, str, str]]) -> None:
    """A run's rows of each table, as stored, in the order they are read back."""
    for select, insert, order in tables:
        rows = source.db.conn.execute(f"{select} WHERE run_id = ? ORDER BY {order}", [run_id]).fetchall()
        if rows:
            target.db.conn.executemany(insert, rows)


def _copy_plans(source: Store, target: Store, tables: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(select, insert, order) for each table the source holds; an older source has fewer
    columns (the target's others take their defaults), a column only the source has is an error."""
    present, plans = set(source.db.table_names()), []
    for table in tables:
        if table not in present:
            continue
        theirs, ours = _columns(source, table), set(_columns(target, table))
        extra = [c for c in theirs if c not in ours]
        if extra:
            raise StoreError(f"{source.path}: table {table} has column(s) {', '.join(extra)} that "
                             f"{target.path} lacks; fix: merge into a store of the same version")
        columns, slots = ", ".join(f"[{c}]" for c in theirs), ", ".join("?" for _ in theirs)
        plans.append((f"SELECT {columns} FROM [{table}]",
                      f"INSERT OR IGNORE INTO [{table}] ({columns}) VALUES ({slots})",
                      ROW_ORDER.get(table, "rowid")))
    return plans


def merge_stores(out: Path, inputs: list[Path]) -> MergeReport:
    """Copy every run of ``inputs`` into ``out`` (:func:`_merge_run` says which copy of a run wins)."""
    stores: list[Store] = []  # the sources, then the target
    try:
        for path in inputs:
            stores.append(Store.open_existing(path))
        sources, target = list(stores), Store(out)
        stores.append(target)
        report = MergeReport()
        for path, source in zip(inputs, sources, strict=True):
            try:
                with source.one_moment():  # a shard that a study still writes: as it was then
                    _merge_one(path, source, target, out, report)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                release_frames(exc)
                raise store_error(_damaged(source, target), exc, "cannot be read or merged") from None
    finally:
        for store in stores:
            store.close()
    return report


def _damaged(source: Store, target: Store) -> Path:
    """Which of the two stores a merge read or wrote when SQLite failed: the one whose integrity
    check finds a problem (the source first), else the target (a lock held too long)."""
    for store in (source, target):
        if integrity_check_lines(store.db.conn):
            return store.path
    return target.path


def _merge_one(path: Path, source: Store, target: Store, out: Path, report: MergeReport) -> None:
    plans = _copy_plans(source, target, RUN_TABLES[1:] + FOLLOWUP_RUN_TABLES)
    runs = source.runs()
    if not runs:
        return
    for start in range(0, len(runs), RUNS_PER_TRANSACTION):
        with target.db.conn:
            for run in runs[start:start + RUNS_PER_TRANSACTION]:
                _merge_run(path, source, target, out, run, plans, report)
    with target.db.conn:
        target._insert("models", list(source.db["models"].rows), replace=True)
        for table in ("followups", "followup_calls"):
            target._insert(table, list(source.db[table].rows), ignore=True)


def _merge_run(path: Path, source: Store, target: Store, out: Path, run: dict,
               plans: list[tuple[str, str, str]], report: MergeReport) -> None:
    """One run of ``source`` into ``target``. Two copies of a run differ while one is unfinished
    (a shard merged while its study plays it, or before a crashed run ran again): the target's
    unfinished copy gives way to the source's, the source's unfinished copy to the target's
    finished one. Two finished copies that differ are an error."""
    run_id = run["run_id"]
    mine = target.run(run_id)
    listed = report.runs_same if mine is not None else report.runs_added
    if mine is not None and _identity(target, run_id) != _identity(source, run_id):
        if mine["status"] in RUN_OUTCOMES:
            if run["status"] in RUN_OUTCOMES:
                raise StoreError(f"{path}: run {run_id} differs from the one already in {out}; fix: "
                                 "merge shards of the same study only, or drop one copy")
            return report.runs_older.append(run_id)
        target.clear_run(run_id)
        target.db.conn.execute("DELETE FROM runs WHERE run_id = ?", [run_id])
        mine, listed = None, report.runs_replaced
    if mine is None:
        target._insert("runs", [run])
    _copy_rows(source, target, run_id, plans)
    listed.append(run_id)


def merge_cassettes(out_dir: Path, input_dirs: list[Path], report: MergeReport) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for folder in input_dirs:
        if not Path(folder).is_dir():
            raise StoreError(f"{folder}: no such cassette folder; fix: pass --cassettes with a "
                             "folder of .jsonl.gz files")
        for path in sorted(Path(folder).glob("*.jsonl.gz")):
            target = out_dir / path.name
            if target.exists():
                if not filecmp.cmp(path, target, shallow=False):
                    raise StoreError(f"{path}: differs from {target}; fix: merge shards of one study")
                report.cassettes_same += 1
            else:
                copy_final(path, target)
                report.cassettes_copied += 1
