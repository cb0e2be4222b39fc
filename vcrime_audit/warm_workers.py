"""Worker processes started before the parent's own work, so that their start (a fresh interpreter
importing the package: ~0.4 s a process on 2 cores) runs while the parent imports and reads its
input instead of after it."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from .collector import collector_off_in_this_process


def warm(targets: tuple[str, ...]) -> None:
    """Import each ``module``, or call each ``module:function`` (with no arguments), in order. A
    target that fails is left: the job that needs it fails the same way, where it is reported."""
    for target in targets:
        module, _, function = target.partition(":")
        try:
            loaded = importlib.import_module(module)
            if function:
                getattr(loaded, function)()
        except Exception:  # noqa: BLE001,S112 -- reported by the job that needs it
            continue


def process_pool(workers: int, targets: tuple[str, ...]) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh interpreters (``spawn``: no thread or connection of this process
    is inherited), the cycle collector off in each (:func:`collector.collector_off_in_this_process`),
    started now: each is given :func:`warm` of ``targets`` first. The pool spawns a process for
    each job it is given while none is idle, so the ``workers`` warm-ups start them all; this
    module and its imports are what a process loads before it takes its warm-up."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_pool_worker_starts, initargs=(os.getpid(),))
    for _ in range(workers):
        pool.submit(warm, targets)
    return pool


def _pool_worker_starts(parent: int) -> None:
    collector_off_in_this_process()
    end_with_parent(parent)


def end_with_parent(parent: int) -> None:
    """End this process (SIGTERM) when the thread that started it ends, its parent killed say
    (Linux: ``PR_SET_PDEATHSIG``; elsewhere nothing). A pool's worker waits for its next job on a
    queue whose writing end it holds itself, so it never sees its parent go: ``verify --workers
    2`` killed left its two workers waiting for good. The pool is started by the thread that
    submits to it (the main thread of ``verify``), so they end with the command."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
    if os.getppid() != parent:  # the parent ended before this process asked to end with it
        os._exit(0)


@dataclass
class StartedProcess:
    """A process started by :func:`start_processes`, waiting for its one job."""

    process: BaseProcess
    jobs: Connection
    """This process's end of the pipe the job goes through (:meth:`give`, or :meth:`dismiss`)."""
    events: Connection
    """This process's end of the pipe the child reports through (what the job sends)."""

    def give(self, function: Callable[..., None], *args: Any) -> None:
        """Run ``function(*args, events)`` in the child, ``events`` its end of :attr:`events`."""
        self.jobs.send((function, args))
        self.jobs.close()

    def dismiss(self) -> None:
        """No job: the child exits once it is warm; waits for that."""
        self.jobs.close()
        self.events.close()
        self.process.join()


def start_processes(count: int, targets: tuple[str, ...], name: str) -> list[StartedProcess]:
    """``count`` fresh interpreters (``spawn``) started now, each :func:`warm` of ``targets``,
    then waiting for the job :meth:`StartedProcess.give` sends it. A parent that ends without
    giving one closes its ends of the pipes, and the child ends too."""
    context = multiprocessing.get_context("spawn")
    started = []
    for index in range(count):
        jobs_reader, jobs_writer = context.Pipe(duplex=False)
        events_reader, events_writer = context.Pipe(duplex=False)
        process = context.Process(target=_serve, args=(targets, jobs_reader, events_writer),
                                  name=f"{name}-{index + 1}", daemon=True)
        process.start()
        jobs_reader.close()
        events_writer.close()  # the child holds the only writing end: its exit is the pipe's end
        started.append(StartedProcess(process, jobs_writer, events_reader))
    return started


def _serve(targets: tuple[str, ...], jobs: Connection, events: Connection) -> None:
    try:
        warm(targets)
        try:
            function, args = jobs.recv()
        except EOFError:  # dismissed, or the parent is gone
            return
        jobs.close()
        function(*args, events)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the parent reports it
        sys.exit(130)
