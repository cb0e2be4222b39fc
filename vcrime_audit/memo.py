"""Values computed once per object, for objects that never change once made.

A world is copy-on-write: ``patch.Draft`` copies a world and each object it changes, and nothing
else changes one, so a world or world object seen before still reads the same. What is made from
it (its canonical JSON, its text in a prompt) can be kept per object. DEVELOPERS.md ("Speed: what
the fast paths rely on") names this invariant; breaking it changes prompts and stored rows, which
every replay of a committed cassette would catch.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

T = TypeVar("T")
K = TypeVar("K")

RUNS_FLOOR = 4
"""Per-run memos are sized for at least this many runs in flight."""
_runs_in_flight = 1
_PER_RUN: weakref.WeakSet[IdentityMemo[object]] = weakref.WeakSet()


class IdentityMemo(Generic[T]):
    """``make(obj)``, kept per object. The object is kept with its value, so its id cannot be
    reused while the entry lives. Past ``limit`` entries the oldest one goes, one per new entry:
    dropping them all at once freed up to 50,000 objects in one go (a paper-size study's
    callbacks of 66-75 ms of CPU went with that change; the longest left use under 10 ms).

    ``per_run``: ``limit`` entries per run in flight (:func:`runs_in_flight`, at least
    :data:`RUNS_FLOOR`): what is kept of a run's worlds is looked up within a turn or two of
    their making, so entries beyond that only keep dead worlds alive. Sized for 256 runs while
    one played, they kept ~1,000 worlds' texts for the same hits, and replays ran ~10 % slower
    (the same instructions: likely their objects, freed long after they left the caches)."""

    def __init__(self, limit: int, *, per_run: bool = False) -> None:
        self._per_run = limit if per_run else 0
        self.limit = limit * max(RUNS_FLOOR, _runs_in_flight) if per_run else limit
        self._entries: OrderedDict[int, tuple[object, T]] = OrderedDict()
        if per_run:
            _PER_RUN.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: object, make: Callable[[], T]) -> T:
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return self._keep(obj, make())

    def of(self, obj: K, make: Callable[[K], T]) -> T:
        """``make(obj)``, kept per object: :meth:`get` without a closure made per call (~0.25
        against ~0.4 us a hit; the world's and the prompts' memos are read ~170 times a turn)."""
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return self._keep(obj, make(obj))

    def _keep(self, obj: object, value: T) -> T:
        entries = self._entries
        entries[id(obj)] = (obj, value)
        if len(entries) > self.limit:
            entries.popitem(last=False)
            if len(entries) > self.limit:  # shrinking after a study: one entry less per new one
                entries.popitem(last=False)
        return value

    def _resize(self) -> None:
        """The limit for the runs in flight now. A memo over it shrinks as new entries come, not
        at once: a study's end would free a whole study's worth of worlds in one callback."""
        self.limit = self._per_run * max(RUNS_FLOOR, _runs_in_flight)


@contextmanager
def runs_in_flight(runs: int) -> Iterator[None]:
    """Per-run memos sized for ``runs`` runs played at once in this process, for the block (a
    study's lanes); as they were after it. Outside any block: one run at a time (a replay,
    ``verify``)."""
    before = _runs_in_flight
    _set_runs(max(1, runs))
    try:
        yield
    finally:
        _set_runs(before)


def _set_runs(runs: int) -> None:
    global _runs_in_flight
    _runs_in_flight = runs
    for memo in list(_PER_RUN):
        memo._resize()


class made_once(Generic[T]):  # noqa: N801 -- used as a decorator, like functools.cached_property
    """``functools.cached_property`` without its lock (Python 3.11 takes one on every first read:
    ~0.3 us, five times a request in a replay): the value is kept in the instance's ``__dict__``,
    which later reads find before this descriptor. For objects used from one thread at a time, or
    whose value is the same whoever makes it first. A pydantic model using it lists it in its
    ``ignored_types``, else pydantic takes it for a private attribute's default."""

    def __init__(self, make: Callable[[Any], T]) -> None:
        self.make = make
        self.name = make.__name__
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.make(instance)
        return value
