"""Re-derive every job of a store (or every cassette given) from its cassette and compare.

Each job is replayed into a temporary store, with no model; then every row the job wrote is
compared with the stored one. ``repair`` finishes jobs whose finish was interrupted, from their
cassettes, and compresses cassettes whose compression was.
"""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .cassette import Cassette, CassetteError, CassetteMiss, NoSuchCassette, RecordMode
from .cassette.persist import cassette_exists, journal_path
from .collector import collector_off_while_runs_play, release_frames
from .identity import IDENTICAL
from .recorder import writer_alive
from .regular_files import not_writable
from .rowdigest import TableTuples, compare_table_tuples, compare_tables
from .statuses import CRASHED, RUNNING
from .store import Store
from .store.db import RUN_TABLES, StoreError
from .store.errors import sqlite_message
from .store.integrity_check import IntegrityCheck
from .store.kept import KeptTurnRows
from .warm_workers import process_pool

VERIFIED, DIFFERS, MISSING, UNVERIFIED, INTERRUPTED, REPAIRED, FILE_VERIFIED = (
    "verified", "differs", "cassette missing", "unverified", "interrupted", "repaired",
    "file verified")
T = TypeVar("T")


@dataclass
class Verdict:
    kind: str
    job_id: str
    state: str
    where: str = ""

    @property
    def ok(self) -> bool:
        return self.state in (VERIFIED, REPAIRED, FILE_VERIFIED)

    def line(self) -> str:
        return f"{self.state:<16} {self.kind} {self.job_id}" + (f": {self.where}" if self.where else "")


def _run_table_tuples(store: Store, run_id: str) -> dict[str, TableTuples]:
    """The rows of a run that ``verify`` compares (:func:`rowdigest.compare_table_tuples`): its
    run, its turns' rows and its live judgments, as columns and rows' values; not its follow-ups,
    each verified on its own. A run the store lacks is one row of no columns."""
    runs = store.row_tuples("runs", run_id)
    out = {"runs": runs if runs[1] else ([], [()])}
    for table in RUN_TABLES[1:]:
        out[table] = store.row_tuples(table, run_id, "source = 'live'" if table == "judgments" else "")
    return out


def _find(recorded: str | None, search: list[Path]) -> Path | None:
    if not recorded:
        return None
    path = Path(recorded)
    if cassette_exists(path):
        return path
    for folder in search:
        candidate = folder / path.name
        if cassette_exists(candidate):
            return candidate
    return None


def _open(db: Path, repair: bool) -> Store:
    """The store to verify: as any command opens it (migrated if older), or, where this process
    may not write it (an archive on a read-only file system, a file without write permission),
    read-only; ``--repair`` writes it, so there that is an error."""
    if not (why := not_writable(db)):
        return Store(db)
    if repair:
        raise StoreError(f"{db}: cannot be written here ({why}), and --repair writes the jobs it "
                         "finishes into it; fix: copy the store to a writable folder, or verify "
                         "without --repair")
    return Store(db, readonly=True)


def _verify_runs(db: str, search: list[str], run_ids: list[str]) -> list[Verdict]:
    """A worker process's share of :meth:`Verifier.store`: these runs' verdicts, in order."""
    verifier = Verifier([Path(p) for p in search])
    store = _open(Path(db), repair=False)
    try:
        verifier.runs(store, set(run_ids))
    finally:
        store.close()
        verifier.close()
    return verifier.verdicts


def _played(job: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(job)``, whose failure lets go of the job's objects at once
    (:func:`collector.release_frames`): verifying runs with the collector off, each failed replay
    (a replay miss, after a prompt change: every run) otherwise kept its cassette and rows."""
    try:
        return asyncio.run(job)
    except BaseException as exc:
        release_frames(exc)
        raise


def _replay_in_memory(cassette: Cassette, read: Callable[[Store, str], T],
                      found_for: str | None = None) -> tuple[Any, T]:
    """A run's cassette replayed into a store in memory whose turns' rows are not inserted
    (:class:`store.kept.KeptTurnRows`): the outcome, with its check against the recording, and
    ``read(store, run_id)`` of the rows it derived. Nothing of it is kept, so no file is
    written, synced and deleted for it. ``found_for``: the run id it was found for, if any."""
    from .runner import replay_loaded

    scratch = KeptTurnRows()
    try:
        outcome = _played(replay_loaded(cassette, scratch, found_for))
        return outcome, read(scratch, outcome.run_id)
    finally:
        scratch.close()


CHUNKS_PER_WORKER = 16
"""Slices of a store's runs per verifying process, before the last ones (:func:`_slices`): a slice
costs ~25 ms to set up (the store opened, its runs listed, an empty scratch store made), and its
verdicts are shown when it ends (of the 960-run corpus: 30 runs, ~3 s)."""


def _slices(items: list[str], workers: int) -> list[list[str]]:
    """Contiguous slices, in order, for ``workers`` processes that each take the next one when
    they are done: :data:`CHUNKS_PER_WORKER` slices per worker, and, once fewer runs are left
    than two such slices per worker, half of each worker's share of what is left each time (at
    least one run). A process that takes the last slice then finishes about when the others do:
    with slices of equal size one process could be left verifying a whole slice alone (of the
    960-run corpus: up to ~3 s of one core idle)."""
    size = max(1, -(-len(items) // (workers * CHUNKS_PER_WORKER)))
    slices, at = [], 0
    while at < len(items):
        take = min(size, max(1, -(-(len(items) - at) // (2 * workers))))
        slices.append(items[at:at + take])
        at += take
    return slices


class Verifier:
    def __init__(self, search: Iterable[Path] = (), repair: bool = False,
                 progress: Callable[[Verdict], None] | None = None, workers: int = 1,
                 pool: ProcessPoolExecutor | None = None) -> None:
        """``workers`` > 1 verifies a store's runs in that many processes (not with ``repair``,
        which writes to the store); ``pool``: those processes, started already
        (:func:`warm_workers.process_pool`: ``vcrime-audit verify`` starts them before its own
        imports), else started when needed; its owner shuts it down."""
        if workers < 1:
            raise ValueError(f"--workers must be at least 1, got {workers}")
        self.search = [Path(p) for p in search]
        self.repair = repair
        self.progress = progress
        self.workers = 1 if repair else workers
        self.pool = pool
        self.verdicts: list[Verdict] = []
        self._tmp = Path(tempfile.mkdtemp(prefix="vcrime-verify-"))

    def close(self) -> None:
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _add(self, verdict: Verdict) -> None:
        self.verdicts.append(verdict)
        if self.progress is not None:
            self.progress(verdict)

    def _scratch(self, name: str, empty: bool = True) -> Path:
        """A place for one job's replay; ``empty``: with a new empty store there, a copy of an
        empty store made once (copying a file is ~10 times faster than creating the tables)."""
        path = self._tmp / f"{len(self.verdicts)}-{name}.sqlite"
        if empty:
            template = self._tmp / "empty.sqlite"
            if not template.exists():
                Store(template).close()
            shutil.copyfile(template, path)
        return path

    # -- a store ---------------------------------------------------------------------------

    def store(self, db: Path, only: set[str] | None = None) -> list[str]:
        """Verify every job of the store ``db`` (``only``: just these runs); returns store-level
        problems."""
        if not Path(db).is_file():
            raise StoreError(f"{db}: no such store; fix: pass --db with a store written by "
                             "vcrime-audit")
        with _open(Path(db), self.repair) as store:
            integrity = IntegrityCheck(Path(db))
            try:
                run_ids = [run["run_id"] for run in store.runs() if only is None or run["run_id"] in only]
                if self.workers > 1 and len(run_ids) > 1:
                    self._runs_in_processes(Path(db), run_ids)
                else:
                    self.runs(store, set(run_ids))
            except BaseException:
                integrity.cancel()
                raise
            problems = integrity.result()
            if only is not None:
                return problems
            for row in list(store.db["certifications"].rows_where(order_by="certification_id")):
                self._job(self._certification, store, "certification", row["certification_id"], row)
            for row in list(store.db["followups"].rows_where(order_by="started_at, followup_id")):
                self._job(self._followup, store, row["kind"], row["followup_id"], row)
            return problems

    def runs(self, store: Store, run_ids: set[str]) -> None:
        """Verify these runs of ``store``, in the store's order (the cycle collector off, as in
        each replay: reading cassettes and rows makes many objects too, none in a cycle)."""
        with collector_off_while_runs_play():
            for run in store.runs():
                if run["run_id"] in run_ids:
                    self._job(self._run, store, "run", run["run_id"], run)

    def _job(self, verify: Callable[[Store, dict[str, Any]], None], store: Store, kind: str,
             job_id: str, row: dict[str, Any]) -> None:
        """``verify(store, row)``; rows of the job that the store cannot give (a damaged page)
        are its verdict, and the other jobs are still verified."""
        try:
            verify(store, row)
        except sqlite3.DatabaseError as exc:
            release_frames(exc)
            self._add(Verdict(kind, job_id, DIFFERS, f"its rows cannot be read ({sqlite_message(exc)}); "
                              "fix: restore the store from a copy, or replay its cassettes into a "
                              "new store"))

    def _runs_in_processes(self, db: Path, run_ids: list[str]) -> None:
        """Each run replayed in one of ``workers`` processes (fresh interpreters: no thread or
        connection of this one is inherited); verdicts come back in the store's run order."""
        search = [str(p) for p in self.search]
        with nullcontext(self.pool) if self.pool is not None else process_pool(self.workers, ()) as pool:
            futures = [pool.submit(_verify_runs, str(db), search, chunk)
                       for chunk in _slices(run_ids, self.workers)]
            try:
                for future in futures:
                    for verdict in future.result():
                        self._add(verdict)
            except BaseException:  # Ctrl-C, a slice that failed: no slice not yet begun begins
                for future in futures:
                    future.cancel()
                pool.shutdown(wait=False, cancel_futures=True)
                raise

    def _unfinished(self, kind: str, job_id: str, row: dict[str, Any]) -> Verdict | None:
        if row["status"] == CRASHED:
            return Verdict(kind, job_id, CRASHED, f"{row.get('reason', '')[:200]}; fix: run it again "
                           "(a study re-runs crashed runs)")
        if row["status"] == RUNNING:
            if writer_alive(row.get("writer")):
                return Verdict(kind, job_id, RUNNING, f"being written by {row['writer']}")
            if not self.repair:
                return Verdict(kind, job_id, INTERRUPTED, "its finish never ran; fix: vcrime-audit "
                               "verify --repair (from the cassette) or resume the job")
        return None

    def _run(self, store: Store, row: dict[str, Any]) -> None:
        run_id = row["run_id"]
        early = self._unfinished("run", run_id, row)
        if early is not None:
            return self._add(early)
        path = _find(row.get("cassette"), self.search)
        if path is None:
            return self._add(Verdict("run", run_id, MISSING, f"{row.get('cassette')}: not found; fix: "
                                     "pass the folder holding it"))
        if row["status"] == RUNNING:
            return self._repair_run(store, run_id, path)
        try:
            outcome, derived = _replay_in_memory(Cassette(path, RecordMode.none, unread_requests=True),
                                                 _run_table_tuples, run_id)
        except (CassetteError, CassetteMiss, StoreError, ValueError) as exc:
            return self._add(Verdict("run", run_id, DIFFERS, _first_line(exc)))
        where = compare_table_tuples(_run_table_tuples(store, run_id), derived)
        self._add(self._verdict("run", run_id, where, outcome.check))
        self._finalise_if_pending(path)

    def _repair_run(self, store: Store, run_id: str, path: Path) -> None:
        from .runner import replay_loaded

        try:
            _played(replay_loaded(Cassette(path, RecordMode.none, unread_requests=True), store, run_id))
        except CassetteMiss:
            return self._add(Verdict("run", run_id, INTERRUPTED, "the cassette stops before the run's "
                                     "end; fix: resume it with a model (vcrime-audit study, or run "
                                     "--record-mode new)"))
        except (CassetteError, StoreError, ValueError) as exc:
            return self._add(Verdict("run", run_id, DIFFERS, _first_line(exc)))
        self._add(Verdict("run", run_id, REPAIRED, "finished from its cassette"))

    def _certification(self, store: Store, row: dict[str, Any]) -> None:
        from .certify import store as cstore
        from .certify.run import replay_certification

        cid = row["certification_id"]
        early = self._unfinished("certification", cid, row)
        if early is not None:
            return self._add(early)
        path = _find(row.get("cassette"), self.search)
        if path is None:
            return self._add(Verdict("certification", cid, MISSING, f"{row.get('cassette')}: not "
                                     "found; fix: pass the folder holding it"))
        if row["status"] == RUNNING:
            return self._repair(lambda: _played(replay_certification(path, store.path, found_for=cid)),
                                "certification", cid)
        try:
            scratch = self._scratch(cid)
            outcome = _played(replay_certification(path, scratch, found_for=cid))
        except (CassetteError, CassetteMiss, StoreError, ValueError) as exc:
            return self._add(Verdict("certification", cid, DIFFERS, _first_line(exc)))

        def tables(s: Store, job: str) -> dict[str, list[dict[str, Any]]]:
            return {"certifications": [cstore.certification(s, job) or {}],
                    "conversations": cstore.conversations(s, job)}

        with Store(scratch) as other:
            replayed = tables(other, outcome.certification_id)
        self._add(self._compare("certification", cid, tables(store, cid), replayed, outcome.check))
        self._finalise_if_pending(path)

    def _followup(self, store: Store, row: dict[str, Any]) -> None:
        from .followups.registry import workflow_for
        from .followups.session import replay

        fid, kind = row["followup_id"], row["kind"]
        early = self._unfinished(kind, fid, row)
        if early is not None:
            return self._add(early)
        path = _find(row.get("cassette"), self.search)
        if path is None:
            return self._add(Verdict(kind, fid, MISSING, f"{row.get('cassette')}: not found; fix: "
                                     "pass the folder holding it"))
        workflow = workflow_for(kind)
        if row["status"] == RUNNING:
            return self._repair(lambda: _played(replay(workflow, path, store, fid)), kind, fid)
        scratch = self._scratch(fid, empty=False)
        store.copy_to(scratch)
        with Store(scratch) as other:
            try:
                outcome = _played(replay(workflow, path, other, fid))
            except (CassetteError, CassetteMiss, StoreError, ValueError) as exc:
                return self._add(Verdict(kind, fid, DIFFERS, _first_line(exc)))
            actual = {"followups": [other.db["followups"].get(fid)], **workflow.result_rows(other, fid),
                      "followup_calls": list(other.db["followup_calls"].rows_where(
                          "followup_id = ?", [fid], order_by="seq"))}
        expected = {"followups": [dict(row)], **workflow.result_rows(store, fid),
                    "followup_calls": list(store.db["followup_calls"].rows_where(
                        "followup_id = ?", [fid], order_by="seq"))}
        self._add(self._compare(kind, fid, expected, actual, outcome.check))
        self._finalise_if_pending(path)

    def _repair(self, action: Callable[[], Any], kind: str, job_id: str) -> None:
        try:
            action()
        except CassetteMiss:
            return self._add(Verdict(kind, job_id, INTERRUPTED, "the cassette stops before the end; "
                                     "fix: run it again with a model (--record-mode new)"))
        except (CassetteError, StoreError, ValueError) as exc:
            return self._add(Verdict(kind, job_id, DIFFERS, _first_line(exc)))
        self._add(Verdict(kind, job_id, REPAIRED, "finished from its cassette"))

    def _compare(self, kind: str, job_id: str, expected: dict[str, list[dict[str, Any]]],
                 actual: dict[str, list[dict[str, Any]]], check: Any) -> Verdict:
        return self._verdict(kind, job_id, compare_tables(expected, actual), check)

    @staticmethod
    def _verdict(kind: str, job_id: str, where: str, check: Any) -> Verdict:
        """Rows that differ (``where``), else the replay's check against the recording."""
        if where:
            return Verdict(kind, job_id, DIFFERS, f"store vs cassette: {where}")
        if check.state != IDENTICAL:
            state = UNVERIFIED if check.state == "unverified" else DIFFERS
            return Verdict(kind, job_id, state, check.line("rows"))
        return Verdict(kind, job_id, VERIFIED)

    def _finalise_if_pending(self, path: Path) -> None:
        if self.repair and journal_path(path).exists():
            cassette = Cassette(path, RecordMode.none)
            if cassette.pending_finalise:
                cassette.finalise()

    # -- cassettes alone -------------------------------------------------------------------

    def cassettes(self, paths: Iterable[Path]) -> None:
        """Verify each cassette alone (the cycle collector off, as in :meth:`runs`)."""
        with collector_off_while_runs_play():
            for path in map(Path, paths):
                files = _cassette_files(path)
                if not files:
                    self._add(Verdict("folder", str(path), MISSING, "no cassette (*.jsonl.gz) in it; "
                                      "fix: give the folder the cassettes were recorded into"))
                for file in files:
                    self._cassette(file)

    def _cassette(self, path: Path) -> None:
        from .certify.run import replay_certification

        try:
            cassette = Cassette(path, RecordMode.none, unread_requests=True)
            kind = cassette.meta.get("kind", "run")
            if kind in ("followup", "harmcheck"):
                if not cassette.verifiable:
                    return self._add(Verdict("cassette", str(path), UNVERIFIED, "no summary"))
                cassette.check_unread()  # every line read in full, as no replay reads them
                return self._add(Verdict("cassette", str(path), FILE_VERIFIED, "checksums and chain "
                                         "hold; its rows replay only on the store it was recorded "
                                         "on: vcrime-audit verify --db STORE"))
            if kind == "certification":
                outcome = _played(replay_certification(path, self._scratch(path.name.split(".")[0])))
            else:
                outcome, _ = _replay_in_memory(cassette, lambda scratch, run_id: None)
        except NoSuchCassette as exc:
            return self._add(Verdict("cassette", str(path), MISSING, _first_line(exc)))
        except (CassetteError, CassetteMiss, StoreError, ValueError) as exc:
            return self._add(Verdict("cassette", str(path), DIFFERS, _first_line(exc)))
        check = outcome.check
        state = {IDENTICAL: VERIFIED, "unverified": UNVERIFIED}.get(check.state, DIFFERS)
        self._add(Verdict("cassette", str(path), state, "" if state == VERIFIED else check.line("rows")))


def _cassette_files(path: Path) -> list[Path]:
    """The cassettes ``path`` names: itself, or a folder's (a journal stands for its cassette)."""
    if not path.is_dir():
        return [path]
    names = {p.name.removesuffix(".journal") + ".gz" if p.name.endswith(".journal") else p.name
             for p in path.iterdir() if p.name.endswith((".jsonl.gz", ".jsonl.journal"))}
    return [path / n for n in sorted(names)]


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
