"""A study played by several processes that share its grid and its store.

One process's event loop and interpreter lock limit how many calls it keeps in flight (each call
costs its loop ~1 ms: the prompt, the cassette, the turn's rows). ``study --processes N`` starts N
worker processes (``spawn``: no thread of this one is copied). The parent reads the store once,
finds the unfinished runs, and hands each worker the same list and one shared counter (a one-row
SQLite file: its lock is released when a process holding it dies, so no worker can wait forever
on a dead one). A worker with a free slot takes the next run, so every run is played once, and
the processes finish together however long their runs are. Each worker has its own backend,
store connection and writer thread; SQLite's locking serialises their transactions
(``tests/test_concurrent_writers.py``), and a run's rows are the same whichever process plays it.

Workers report to the parent, each through its own pipe (no lock shared between processes):
each turn, each finished run, the runs that crashed, and a one-line error for bad input. A worker
that dies (killed, out of memory) leaves its runs in progress unfinished; the parent says so, and
the study resumes them when it is started again, as after any interruption.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from .backends.base import ModelBackend
from .collector import collector_off_in_this_process
from .runner import RunConfig, RunOutcome
from .store import Store
from .study import StudyConfig, StudyProgress, grid, play_runs, unfinished
from .warm_workers import StartedProcess, start_processes

TURNS_EVERY_S = 0.25
"""How often a worker sends the turns it played (the parent's progress moves that often)."""


class WorkerError(Exception):
    """A worker process stopped on bad input, or died; carries the line to show."""


class RunCounter:
    """The index of the next run to play, shared by processes through a one-row SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def create(self) -> RunCounter:
        with sqlite3.connect(self.path) as conn:
            conn.execute("CREATE TABLE next_run (next INTEGER NOT NULL)")
            conn.execute("INSERT INTO next_run VALUES (0)")
        conn.close()
        return self

    def take(self, total: int) -> int | None:
        """The next index below ``total``, or None when every run has been taken."""
        if self._conn is None:
            self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            self._conn.execute("PRAGMA synchronous=OFF")
        (index,) = self._conn.execute(
            "UPDATE next_run SET next = next + 1 WHERE next < ? RETURNING next - 1", [total]
        ).fetchone() or (None,)
        return index

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_conn": None}


@dataclass
class WorkerTask:
    """What one worker process is given (pickled once, at its start)."""

    index: int
    workers: int
    study: StudyConfig
    pending: list[RunConfig]
    replay_only: bool
    counter: RunCounter
    events: Connection | None
    """This worker's end of its pipe to the parent (set in the worker: :func:`_with_events`)."""
    expected_errors: tuple[type[Exception], ...] = ()
    """Errors that mean bad input: sent to the parent as their one line (others are bugs: the
    worker's traceback goes to stderr)."""
    turns: list[str] = field(default_factory=list)
    """Run ids of the turns played and not sent yet."""
    turns_sent_at: float = 0.0

    def take(self) -> int | None:
        return self.counter.take(len(self.pending))

    def send(self, *event: Any) -> None:
        """Send an event, after the turns not sent yet."""
        if self.turns:
            self._send_turns()
        self.events.send(event)

    def turn(self, run_id: str) -> None:
        """A turn played: sent with the next event, or with the turns of the next
        ``TURNS_EVERY_S``. A write to the pipe lets go of the interpreter lock, and getting it back
        can wait for the store's writer thread: a write per turn (~110 a second in all on the
        paper-size grid: 27,136 turns in ~240 s) was where a worker's event loop most often stood
        in its stalls."""
        self.turns.append(run_id)
        if time.monotonic() - self.turns_sent_at >= TURNS_EVERY_S:
            self._send_turns()

    def _send_turns(self) -> None:
        turns, self.turns = self.turns, []
        self.turns_sent_at = time.monotonic()
        self.events.send(("turns", turns))


def share_of(concurrency: int, index: int, workers: int) -> int:
    """Worker ``index``'s runs in flight: ``concurrency`` split as evenly as whole numbers allow."""
    return concurrency // workers + (index < concurrency % workers)


async def play_share(task: WorkerTask, backend: ModelBackend | None = None) -> StudyProgress:
    """Play the runs this worker takes; every turn and run is sent to the parent."""
    study = task.study.model_copy(update={"concurrency": share_of(task.study.concurrency, task.index,
                                                                  task.workers)})
    progress = StudyProgress(total=len(task.pending))
    return await play_runs(study, task.pending, Store(study.db), progress, backend, task.replay_only,
                           on_turn=lambda run_id, _record: task.turn(run_id),
                           on_run=lambda outcome: task.send("run", brief(outcome)), take=task.take)


def brief(outcome: RunOutcome) -> RunOutcome:
    """The outcome as sent to the parent: its check without per-row digests (a long run's would
    fill the pipe and hold the worker's event loop until the parent reads)."""
    return replace(outcome, check=outcome.check.brief())


def study_worker(task: WorkerTask,
                 play: Callable[[WorkerTask], Awaitable[StudyProgress]] = play_share) -> None:
    """A worker process's entry point (``play``: :func:`play_share`, or a benchmark's wrapper of
    it; a ``functools.partial`` of this function with it is a valid ``worker``)."""
    collector_off_in_this_process()
    try:
        progress = asyncio.run(play(task))
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:  # the parent is gone: stop (the runs in flight are marked crashed)
        sys.exit(141)
    except task.expected_errors as exc:
        task.send("error", str(exc))
        sys.exit(2)
    task.send("end", progress.crashed)


def run_study_processes(study: StudyConfig, processes: int, shard: tuple[int, int] = (1, 1),
                        replay_only: bool = False, on_turn: Callable[[str], None] | None = None,
                        on_run: Callable[[RunOutcome], None] | None = None,
                        expected_errors: tuple[type[Exception], ...] = (),
                        worker: Callable[[WorkerTask], None] = study_worker,
                        on_event: Callable[[tuple[Any, ...]], None] | None = None,
                        started: list[StartedProcess] | None = None) -> StudyProgress:
    """Play the study's unfinished runs in ``processes`` worker processes (fewer if fewer runs).

    ``expected_errors`` are the exceptions a worker reports as one line (the command's user
    errors). ``worker`` is the process's entry point (a module-level function; the benchmarks
    wrap :func:`play_share` with their instruments); events other than the study's own go to
    ``on_event``. ``started``: processes started already (``study --processes`` starts them
    before its own imports), of which those not needed are dismissed; else they are started
    here. Raises :class:`WorkerError` when a worker met bad input or died, after the others
    have finished the runs left."""
    try:
        runs = grid(study, shard)
        progress = StudyProgress(total=len(runs))
        with Store(study.db) as store:
            pending = unfinished(runs, store, study.cassette_dir, progress)
        workers = min(processes, len(pending), study.concurrency)
        started = started if started is not None else start_processes(workers, (), "vcrime-study")
        workers = min(workers, len(started))
    except BaseException:
        for process in started or ():
            process.dismiss()
        raise
    for spare in started[workers:]:
        spare.dismiss()
    if not pending:
        return progress
    with tempfile.TemporaryDirectory(prefix="vcrime-study-") as scratch:
        counter = RunCounter(Path(scratch) / "next-run.sqlite").create()
        children, readers = [], []
        for index, process in enumerate(started[:workers]):
            task = WorkerTask(index, workers, study, pending, replay_only, counter, None, expected_errors)
            process.give(_with_events, worker, task)
            children.append(process.process)
            readers.append(process.events)
        try:
            problems = _follow(children, readers, progress, on_turn, on_run, on_event)
        except BaseException:
            _stop(children)
            raise
        finally:
            for reader in readers:
                reader.close()
    if problems:
        raise WorkerError("; ".join(dict.fromkeys(problems)))
    return progress


def _with_events(worker: Callable[[WorkerTask], None], task: WorkerTask, events: Connection) -> None:
    """A started process's job (:meth:`warm_workers.StartedProcess.give`): ``worker(task)``,
    reporting through ``events``."""
    task.events = events
    worker(task)


def _follow(children: list[Any], readers: list[Connection], progress: StudyProgress,
            on_turn: Callable[[str], None] | None, on_run: Callable[[RunOutcome], None] | None,
            on_event: Callable[[tuple[Any, ...]], None] | None) -> list[str]:
    """Read the workers' events until every pipe has ended; the problems to report."""
    problems: list[str] = []
    reported = [False] * len(children)
    open_ = dict(enumerate(readers))
    while open_:
        for reader in wait(list(open_.values())):
            index = readers.index(reader)
            try:
                event = reader.recv()
            except EOFError:  # the worker has exited
                del open_[index]
                children[index].join()
                if not reported[index]:
                    problems.append(_death(index, len(children), children[index].exitcode))
                continue
            kind = event[0]
            if kind == "turns":
                progress.turns += len(event[1])
                for run_id in event[1] if on_turn else ():
                    on_turn(run_id)
            elif kind == "run":
                progress.done += 1
                progress.outcomes.append(event[1])
                if on_run:
                    on_run(event[1])
            elif kind == "end":
                reported[index] = True
                progress.crashed.extend(event[1])
            elif kind == "error":
                reported[index] = True
                problems.append(event[1])
            elif on_event:
                on_event(event)
    return problems


def _death(index: int, workers: int, exitcode: int | None) -> str:
    how = (f"was ended by signal {-exitcode}" if exitcode is not None and exitcode < 0
           else f"exited with code {exitcode}")
    return (f"study worker {index + 1} of {workers} {how} before it finished; fix: start the study "
            "again: its runs in progress resume from their cassettes")


def _stop(children: list[Any]) -> None:
    """After an interruption: give the workers (interrupted too) a moment, then end them."""
    for child in children:
        child.join(timeout=10)
    for child in children:
        if child.is_alive():
            child.terminate()
            child.join(timeout=5)
