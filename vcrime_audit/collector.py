"""CPython's cycle collector paused while the audit or a study builds its many objects.

Reference counting frees an object as soon as nothing refers to it; the cycle collector only finds
groups of objects that refer to each other and to nothing else. It runs after every few hundred
allocations, and, as the heap grows, walks every object again, each time. Measured on 2 cores
(benchmarks/):
- an audit of the 960-run store holds several hundred thousand rows, keys and sums, none in a
  cycle; the collector took 1 to 1.4 s of its CPU;
- a study with 256 runs in flight holds 256 worlds; with the collector on, the study took
  127.7 s for 320 runs (22,469 calls) and one pass over the heap held its event loop for up to
  1.8 s; with it off, 107.1 s, and 2,361 collectable objects were left at the end. With young
  collections only (below), 113.5 s and 49 left: the cycles that do form (an exception and its
  frames) die young;
- young collections that still walked the middle generation every tenth pass held that study's
  event loop for 0.15-0.34 s at a time. Walking only the youngest objects, every 20,000
  allocations, the worst stall of its 320-run benchmark is 56-87 ms, about what it is with the
  collector off (88 ms); replays and verification run this way too (one replay: ~7 % less CPU).
"""

from __future__ import annotations

import atexit
import gc
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


OLD_GENERATION_NEVER = 2**31 - 1
"""A threshold the count of young collections never reaches (a C int)."""


_young_only_depth = 0
_thresholds_outside: tuple[int, ...] = ()


@contextmanager
def young_collections_only(threshold: int = 20_000) -> Iterator[None]:
    """Inside the block, the collector walks only the objects made since its last pass, after every
    ``threshold`` allocations (CPython's default: 700, when most of a turn's objects are still
    alive), never the older ones (the worlds of the runs in flight), which it walks again once
    the block is left; thresholds as they were after. For long jobs that may raise often:
    their exceptions' cycles are still collected while young.

    Blocks may nest and overlap (coroutines of one event loop leave them in any order): the
    thresholds come back when the last open block closes."""
    global _young_only_depth, _thresholds_outside
    if _young_only_depth == 0:
        _thresholds_outside = gc.get_threshold()
    _young_only_depth += 1
    gc.set_threshold(threshold, OLD_GENERATION_NEVER, OLD_GENERATION_NEVER)
    try:
        yield
    finally:
        _young_only_depth -= 1
        if _young_only_depth == 0:
            gc.set_threshold(*_thresholds_outside)


@cache
def no_collection_at_exit() -> None:
    """At interpreter exit, leave the objects alive then to the OS: CPython's last collection walks
    all of them, the modules' included (~0.05-0.09 s after an audit, measured). Only for commands
    that have closed every file they wrote and whose objects need no finalizer: an object in a
    cycle then never has ``__del__`` called. Registered once, however often it is called."""
    atexit.register(gc.freeze)
