"""CPython's cycle collector paused while the audit builds its rows."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cycle collector off for the block, and as it was after.

    An audit of a 960-run store builds several hundred thousand small objects that hold no
    cycles (rows, keys, sums). Every few hundred allocations the collector walks the young ones,
    and as the heap grows, all of them again: 1 to 1.4 s of CPU of the audit
    (benchmarks/bench_audit.py). Reference counting still frees every one of them; the few cycles
    the block makes are collected once it ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
