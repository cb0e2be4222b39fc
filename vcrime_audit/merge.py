"""Combine stores and cassettes made by shards of a study."""

from __future__ import annotations

import filecmp
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from .store import Store, turn_rows_hash
from .store.db import FOLLOWUP_RUN_TABLES, RUN_TABLES, StoreError


@dataclass
class MergeReport:
    runs_added: list[str] = field(default_factory=list)
    runs_same: list[str] = field(default_factory=list)
    cassettes_copied: int = 0
    cassettes_same: int = 0


def _identity(store: Store, run_id: str) -> tuple[dict, str]:
    """What must agree for two copies of a run to be the same run: its settings and trajectory."""
    run = store.run(run_id) or {}
    stable = {k: v for k, v in run.items()
              if k not in ("started_at", "finished_at", "cassette", "turn_rows_hash")}
    return stable, turn_rows_hash(store, run_id)


def _copy_rows(source: Store, target: Store, run_id: str, tables: tuple[str, ...]) -> None:
    for table in tables:
        if table in source.db.table_names():
            target._insert(table, source.rows(table, run_id), ignore=True)


def merge_stores(out: Path, inputs: list[Path]) -> MergeReport:
    """Copy every run of ``inputs`` into ``out``. The same run id with other content is an error."""
    sources = [Store.open_existing(path) for path in inputs]
    target = Store(out)
    report = MergeReport()
    for path, source in zip(inputs, sources, strict=True):
        try:
            _merge_one(path, source, target, out, report)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: cannot be read or merged ({exc}); fix: check both stores "
                             "with `vcrime-audit verify`") from None
    return report


def _merge_one(path: Path, source: Store, target: Store, out: Path, report: MergeReport) -> None:
    for run in source.runs():
        run_id = run["run_id"]
        known = target.run(run_id) is not None
        if known and _identity(target, run_id) != _identity(source, run_id):
            raise StoreError(f"{path}: run {run_id} differs from the one already in {out}; "
                             "fix: merge shards of the same study only, or drop one copy")
        with target.db.conn:
            if not known:
                target._insert("runs", [run])
            _copy_rows(source, target, run_id, RUN_TABLES[1:] + FOLLOWUP_RUN_TABLES)
            target._insert("models", list(source.db["models"].rows), replace=True)
            for table in ("followups", "followup_calls"):
                target._insert(table, list(source.db[table].rows), ignore=True)
        (report.runs_same if known else report.runs_added).append(run_id)


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
                shutil.copy2(path, target)
                report.cassettes_copied += 1
