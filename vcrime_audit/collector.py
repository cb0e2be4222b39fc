"""CPython's cycle collector paused while the audit or a study builds its many objects.

Reference counting frees an object as soon as nothing refers to it; the cycle collector only finds
groups of objects that refer to each other and to nothing else. It runs after every few hundred
allocations, and, as the heap grows, walks every object again, each time. Measured on 2 cores
(benchmarks/):
- an audit of the 960-run store holds several hundred thousand rows, keys and sums, none in a
  cycle; the collector took 1 to 1.4 s of its CPU;
- a study with 256 runs in flight holds 256 worlds, and drops old ones every turn: young passes
  came late (see :func:`collector_off_while_runs_play`) and held its event loop for 20-90 ms.
"""

from __future__ import annotations

import atexit
import gc
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off for the block, and as it was after (it then collects whatever
    cycles the block left, in its own time). Usable as a decorator."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


_off_depth = 0
_enabled_outside = True


@contextmanager
def collector_off_while_runs_play() -> Iterator[None]:
    """The cycle collector off while any block is open; as it was once the last one closes (it
    then collects whatever cycles the blocks left, in its own time). For episodes, replays and a
    study's runs: their objects hold no cycles (a 320-run study left 1,980 cyclic objects in
    all, every one from pydantic building its JSON schemas once, none per run:
    ``tests/test_study.py`` fails if a run leaves any), so the collector only costs time.

    Why not young collections only (what this replaced): CPython counts a collection due after
    its threshold of allocations *less deallocations*, and the worlds that runs drop every turn
    are old objects, so in a study a young pass came late and walked 50,000-90,000 new objects
    at once: 20-90 ms with the event loop held, the longest callbacks of the study, and ~4 % of
    its CPU (benchmarks/bench_concurrency.py prints both).

    Blocks may nest and overlap (coroutines of one event loop leave them in any order)."""
    global _off_depth, _enabled_outside
    if _off_depth == 0:
        _enabled_outside = gc.isenabled()
        gc.disable()
    _off_depth += 1
    try:
        yield
    finally:
        _off_depth -= 1
        if _off_depth == 0 and _enabled_outside:
            gc.enable()


def collector_off_in_this_process() -> None:
    """The cycle collector off for the rest of this process: for worker processes that only play
    runs and end with their share (``study --processes``, ``verify --workers``). Their runs play
    in blocks of :func:`collector_off_while_runs_play` (a verifying worker's, a slice at a
    time), and the collector's pass as each block ended walked every object left alive (what the
    memos keep) and found nothing to free: ~2 % of a verifying process's CPU, and ~0.3 s at the
    end of a study's worker, just before it exits (py-spy). Runs leave no cycles
    (``tests/test_study.py`` and ``tests/test_verify.py`` count them)."""
    gc.disable()


def release_frames(exc: BaseException) -> None:
    """Clear the locals of the finished frames that ``exc``'s traceback holds, and its cause's
    and context's. With the collector off, an exception raised in an asyncio task and caught
    outside it sits in a reference cycle (the task holds the exception, whose traceback holds
    the task's frame, which holds the task), and its frames hold what the failed job held: a
    replay that missed kept its cassette, rows and worlds (~7 MB a run on c960 cassettes) until
    the collector ran, and a worker whose collector stays off kept every one. Cleared, the frames
    let go of them and the cycle is gone; the traceback still says where it was raised."""
    stack: list[BaseException | None] = [exc]
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        stack += [current.__cause__, current.__context__]


@cache
def no_collection_at_exit() -> None:
    """At interpreter exit, leave the objects alive then to the OS: CPython's last collection walks
    all of them, the modules' included (~0.05-0.09 s after an audit, measured). Only for commands
    that have closed every file they wrote and whose objects need no finalizer: an object in a
    cycle then never has ``__del__`` called. Registered once, however often it is called."""
    atexit.register(gc.freeze)
