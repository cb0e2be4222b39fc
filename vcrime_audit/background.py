"""Threads for a job's background work, at a lower CPU priority than the event loop.

A recording job writes behind its model calls: the cassette journal's lines are sealed (hashed),
compressed and made durable, and the store's transactions committed, on worker threads. Their
results are needed only at the job's next turn, while the event loop that sends the calls is
what keeps a model server busy. On 2 cores the loop had to wait for the CPU behind them: in a
240-run scripted study (2 processes, 256 calls in flight) the background threads at the loop's
priority left 89.6-91.3 % of the ideal calls in flight and a worst event-loop stall of 40-46 ms;
10 steps nicer, 92.2-93.7 % and 29-31 ms (``benchmarks/bench_concurrency.py``, alternated runs).

On Linux each background thread is made :data:`NICER` steps nicer than the thread that starts
it (a thread's nice value is its own there); a limit that refuses it leaves the thread as it is.
The work itself, its order and its results are unchanged: only who gets the CPU first.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
NICER = 10
_MAX_NICE = 19
_executor: ThreadPoolExecutor | None = None
_made = threading.Lock()


def lower_priority() -> None:
    """Make the calling thread :data:`NICER` steps nicer (Linux; elsewhere nothing)."""
    if not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        now = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(_MAX_NICE, now + NICER))
    except OSError:  # a sandbox that forbids it: the thread keeps the loop's priority
        pass


def executor(name: str, workers: int | None = None) -> ThreadPoolExecutor:
    """A thread pool whose threads run at the background priority (``workers``: as many as
    ``ThreadPoolExecutor``'s default when None)."""
    return ThreadPoolExecutor(workers, thread_name_prefix=name, initializer=lower_priority)


def _shared() -> ThreadPoolExecutor:
    global _executor
    with _made:
        if _executor is None:
            _executor = executor("background")
        return _executor


async def to_thread(func: Callable[..., T], *args: object) -> T:
    """``asyncio.to_thread(func, *args)`` on a background thread (the context is carried over,
    as ``to_thread`` does)."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(
        _shared(), functools.partial(context.run, func, *args))
