"""Worker processes started before the parent's own work, so that their start (a fresh interpreter
importing the package: ~0.4 s a process on 2 cores) runs while the parent imports and reads its
input instead of after it."""

from __future__ import annotations

import importlib
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

from .collector import collector_off_in_this_process


def warm(targets: tuple[str, ...]) -> None:
    """Import each ``module``, or call each ``module:function`` (with no arguments), in order."""
    for target in targets:
        module, _, function = target.partition(":")
        loaded = importlib.import_module(module)
        if function:
            getattr(loaded, function)()


def process_pool(workers: int, targets: tuple[str, ...]) -> ProcessPoolExecutor:
    """A pool of ``workers`` fresh interpreters (``spawn``: no thread or connection of this process
    is inherited), the cycle collector off in each (:func:`collector.collector_off_in_this_process`),
    started now: each is given :func:`warm` of ``targets`` first. The pool spawns a process for
    each job it is given while none is idle, so the ``workers`` warm-ups start them all; this
    module and its imports are what a process loads before it takes its warm-up."""
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=collector_off_in_this_process)
    for _ in range(workers):
        pool.submit(warm, targets)
    return pool
