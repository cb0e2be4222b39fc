"""One recorder for every job (an episode, a certification, a follow-up).

It owns the job's cassette and its rows in the store: ``start`` claims the job (one writer per
job id) and writes its ``running`` row; ``commit`` makes one unit's calls durable in the cassette
journal and then writes the unit's rows in one transaction (a replay's units: several in one,
:class:`TurnCommits`); ``finish`` writes the cassette summary, the job's final fields and then
the compressed cassette; ``crash`` marks the job ``crashed`` with a scrubbed reason and keeps
every committed unit for a resume.

The order makes every kill point recoverable: a cassette never lacks a call that the store's
rows depend on, and a job whose finish was interrupted is still ``running`` (so it is resumed)
or has a journal that already holds its summary (so only the compression is left to do).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import background
from .backends.base import ModelBackend
from .cassette import Cassette, Pending, RecordingBackend
from .identity import ReplayCheck
from .scrub import scrub_text
from .slices import take_turn
from .statuses import CRASHED, RUNNING
from .store import Store
from .store.db import StoreError

_CLAIMED: set[tuple[str, str, str]] = set()
KILL_ENV = "VCRIME_KILL_AT"
"""Fault injection for crash tests: ``POINT:N`` kills this process with SIGKILL the N-th time it
reaches POINT (start, flush, commit, summary, finish)."""
_REACHED: dict[str, int] = {}


def kill_point(name: str) -> None:
    spec = os.environ.get(KILL_ENV)
    if not spec or spec.partition(":")[0] != name:
        return
    _REACHED[name] = _REACHED.get(name, 0) + 1
    if _REACHED[name] == int(spec.partition(":")[2] or 1):
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class JobKind:
    table: str
    key: str
    noun: str


RUN = JobKind("runs", "run_id", "run")
CERTIFICATION = JobKind("certifications", "certification_id", "certification")
FOLLOWUP = JobKind("followups", "followup_id", "follow-up")


class WriterBusy(StoreError):
    """Another process (or another task of this one) is writing the same job."""


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def this_writer() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def writer_alive(writer: str | None) -> bool:
    """Whether ``host:pid`` is a live process of this host (another host's writer counts as live)."""
    if not writer or ":" not in writer:
        return False
    host, _, pid = writer.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


class Borrowed:
    """A shared backend lent to one job: everything but closing is passed through."""

    def __init__(self, inner: ModelBackend) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "none")

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.inner.fingerprint(model)

    async def generate(self, request: Any) -> Any:
        return await self.inner.generate(request)

    async def aclose(self) -> None:
        pass


class TurnCommits:
    """A job's units (an episode's turns) committed behind its next model calls.

    Each unit is committed as :meth:`Recorder.commit` does (its calls reach the journal, then
    its rows the store), and each commit finishes before the next one starts, so units reach
    the journal and the store in order. A recording job does not wait for the commit: the next
    unit's calls go out while the journal's fsync and the transaction (~15-80 ms on a busy
    machine) run off the loop. Calls of the unit in flight are not in the journal until it is
    committed, as before: a crash forgets them, and the job asks again when resumed. The first
    unit of a recording waits for its commit (the journal is opened then, from the loop's
    calls).

    A replay commits in place, :data:`REPLAYED_UNITS_PER_COMMIT` units to a transaction (and
    the rest at :meth:`wait` or :meth:`settle`): it derives every unit again from the first
    whenever it runs, so a unit committed alone would spare a crashed replay nothing, and a
    commit per unit cost 5-11 % of its CPU (20 replays: min and median). ``then`` runs as each
    unit is added."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self._last: asyncio.Future[None] | None = None
        self._replayed: list[Callable[[Store], None]] = []

    async def add(self, write: Callable[[Store], None], then: Callable[[], None] | None = None) -> None:
        """Commit the unit that has just ended (``then`` runs once it is committed; in a
        replay, at once)."""
        recorder = self.recorder
        if not recorder.cassette.recording:
            self._replayed.append(write)
            if len(self._replayed) >= REPLAYED_UNITS_PER_COMMIT:
                self._commit_replayed()
            if then is not None:
                then()
            return
        await self.wait()
        if not recorder.cassette.journal_open:
            await recorder.commit_off_loop(write)
            if then is not None:
                then()
            return
        self._last = asyncio.ensure_future(recorder.commit_taken(recorder.cassette.take_pending(), write,
                                                                 then))

    def _commit_replayed(self) -> None:
        writes, self._replayed = self._replayed, []
        store = self.recorder.store

        def write_all() -> None:
            for write in writes:
                write(store)

        if writes:
            self.recorder.commit(write_all)

    async def wait(self) -> None:
        """Until the last unit's commit is done; raises what it raised."""
        self._commit_replayed()
        last, self._last = self._last, None
        if last is not None:
            await last

    async def settle(self) -> None:
        """After a failure: wait for the commit in flight, whatever it ends in (the job is then
        marked crashed with what is committed)."""
        try:
            self._commit_replayed()
        except Exception:  # noqa: BLE001 -- the job's own failure is the one reported
            pass
        last, self._last = self._last, None
        if last is not None:
            await asyncio.wait([last])
            if not last.cancelled():
                last.exception()  # retrieved: the job's own failure is the one reported


REPLAYED_UNITS_PER_COMMIT = 16
"""Units a replay commits together: the write lock is held for 16 turns' rows (~15 ms: making and
inserting a turn's rows took ~1 ms, by py-spy over 20 replays), not a whole run's, when
processes replay into one store (``study --replay --processes``)."""


class Recorder:
    def __init__(self, kind: JobKind, job_id: str, cassette: Cassette, store: Store,
                 inner: ModelBackend | None = None, *, owns_inner: bool = True) -> None:
        self.kind, self.job_id, self.cassette, self.store = kind, job_id, cassette, store
        lent = inner if owns_inner or inner is None else Borrowed(inner)
        self.backend = RecordingBackend(cassette, lent)
        self._claim = (str(store.path.resolve()), kind.table, job_id)

    def start(self, row: dict[str, Any], clear: Callable[[Store], None] | None = None,
              also: Callable[[Store], None] | None = None) -> None:
        """Claim the job and replace any earlier attempt's rows by a fresh ``running`` row."""
        self._check_unclaimed()
        self._start(self.store, row, clear, also)
        _CLAIMED.add(self._claim)
        kill_point("start")

    async def start_off_loop(self, row: dict[str, Any], clear: Callable[[Store], None] | None = None,
                             also: Callable[[Store], None] | None = None) -> None:
        """:meth:`start` without blocking the event loop: a recording job's claim runs on the
        store's writer thread, after the transactions sent before it (on the loop, taking the
        write lock waited for them, in SQLite's busy handler's growing sleeps). A replay starts
        in place."""
        if not self.cassette.recording:
            return self.start(row, clear, also)
        self._check_unclaimed()
        _CLAIMED.add(self._claim)  # before the wait: another task of this process may start it too
        try:
            await self.store.commit_off_loop(lambda store: self._start(store, row, clear, also),
                                             transaction=False)
        except BaseException:
            _CLAIMED.discard(self._claim)
            raise
        kill_point("start")

    def _check_unclaimed(self) -> None:
        if self._claim in _CLAIMED:
            raise WriterBusy(f"{self.kind.noun} {self.job_id} is being written by this process "
                             "already (is it listed twice?); fix: list each job once")

    def _start(self, store: Store, row: dict[str, Any], clear: Callable[[Store], None] | None,
               also: Callable[[Store], None] | None) -> None:
        conn = store.db.conn
        with store.immediate():
            found = conn.execute(f"SELECT status, writer FROM [{self.kind.table}] WHERE "
                                 f"[{self.kind.key}] = ?", [self.job_id]).fetchone()
            if found and found[0] == RUNNING and found[1] != this_writer() and writer_alive(found[1]):
                raise WriterBusy(f"{self.kind.noun} {self.job_id} is being written by process "
                                 f"{found[1]} into {store.path}; fix: wait for it to finish, "
                                 "or use another --db")
            if clear is not None:
                clear(store)
            conn.execute(f"DELETE FROM [{self.kind.table}] WHERE [{self.kind.key}] = ?", [self.job_id])
            store.insert_rows(self.kind.table, [{**row, "status": RUNNING, "writer": this_writer()}])
            if also is not None:
                also(store)

    def commit(self, write: Callable[[], None], unit: object | None = None) -> None:
        """The unit's calls reach the journal first, then its rows reach the store."""
        self.cassette.flush(unit)
        kill_point("flush")
        with self.store.db.conn:
            write()
        kill_point("commit")

    async def commit_off_loop(self, write: Callable[[Store], None]) -> None:
        """:meth:`commit` without blocking the event loop (same order, same kill points): the
        journal's fsync runs on a worker thread, the transaction on the store's writer thread
        (``write`` gets that thread's store). A replay, which has nothing to wait for, commits
        in place."""
        if not self.cassette.recording:
            self.commit(lambda: write(self.store))
            return
        await self._commit_off_loop(self.cassette.flush, write)
        await take_turn()

    async def commit_taken(self, due: list[Pending], write: Callable[[Store], None],
                           then: Callable[[], None] | None = None) -> None:
        """:meth:`commit_off_loop` of calls already taken out of the cassette
        (:meth:`Cassette.take_pending`), so the job may record its next calls meanwhile."""
        await self._commit_off_loop(lambda: self.cassette.flush_taken(due), write)
        if then is not None:
            then()

    async def _commit_off_loop(self, flush: Callable[[], object], write: Callable[[Store], None]) -> None:
        await background.to_thread(flush)
        kill_point("flush")
        await self.store.commit_off_loop(write)
        kill_point("commit")

    def finish(self, fields: dict[str, Any], summary: dict[str, Any], hash_field: str) -> ReplayCheck:
        """Write the summary (its ``hash_field`` and ``rows`` digest included), the job's final
        fields, then the final cassette; the check compares with the summary held before. A
        replay's checkpoint may run behind it (:meth:`Store.fold_jobs_behind`)."""
        recorded = self.cassette.summary
        if self.cassette.recording:
            self.cassette.close_with_summary(summary)
            kill_point("summary")
        self._update({**fields, "writer": None, "finished_at": now()})
        if self.cassette.recording:
            self.store.checkpoint()
            kill_point("finish")
            self.cassette.finalise()
        else:
            self.store.job_replayed()
        self._release()
        return ReplayCheck(hash_field, summary[hash_field], summary["rows"], recorded,
                           self.cassette.recording, summary)

    async def finish_off_loop(self, fields: dict[str, Any], summary: dict[str, Any],
                              hash_field: str) -> ReplayCheck:
        """:meth:`finish` without blocking the event loop (same order, same kill points): the
        summary's fsync and the compression on worker threads, the final fields and the
        checkpoint on the store's writer thread. A replay finishes in place."""
        if not self.cassette.recording:
            return self.finish(fields, summary, hash_field)
        recorded = self.cassette.summary
        await background.to_thread(self.cassette.close_with_summary, summary)
        kill_point("summary")
        final = {**fields, "writer": None, "finished_at": now()}
        await self.store.commit_off_loop(lambda store: self._update(final, store))
        await self.store.commit_off_loop(lambda store: store.checkpoint(), transaction=False)
        kill_point("finish")
        await background.to_thread(self.cassette.finalise)
        self._release()
        return ReplayCheck(hash_field, summary[hash_field], summary["rows"], recorded,
                           self.cassette.recording, summary)

    def crash(self, exc: BaseException) -> None:
        """Mark the job crashed; calls of the unit in flight are forgotten, committed ones kept."""
        self.cassette.discard_pending()
        self.cassette.close()
        reason = scrub_text(f"{type(exc).__name__}: {exc}")[:2000]
        try:
            self._update({"status": CRASHED, "reason": reason, "writer": None, "finished_at": now()})
            self.store.checkpoint()
        finally:
            self._release()

    def _update(self, fields: dict[str, Any], store: Store | None = None) -> None:
        sets = ", ".join(f"[{k}] = ?" for k in fields)
        conn = (store or self.store).db.conn
        with conn:
            conn.execute(f"UPDATE [{self.kind.table}] SET {sets} WHERE [{self.kind.key}] = ?",
                         [*fields.values(), self.job_id])

    def _release(self) -> None:
        _CLAIMED.discard(self._claim)

    async def aclose(self) -> None:
        await self.backend.aclose()
