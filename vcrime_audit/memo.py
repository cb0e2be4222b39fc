"""Values computed once per object, for objects that never change once made.

A world is copy-on-write: ``patch.Draft`` copies a world and each object it changes, and nothing
else changes one, so a world or world object seen before still reads the same. What is made from
it (its canonical JSON, its text in a prompt) can be kept per object. DEVELOPERS.md ("Speed: what
the fast paths rely on") names this invariant; breaking it changes prompts and stored rows, which
every replay of a committed cassette would catch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class IdentityMemo(Generic[T]):
    """``make(obj)``, kept per object. The object is kept with its value, so its id cannot be
    reused while the entry lives. Past ``limit`` entries the oldest one goes, one per new entry:
    dropping them all at once freed up to 50,000 objects in one go (a paper-size study's
    callbacks of 66-75 ms of CPU went with that change; the longest left use under 10 ms)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[int, tuple[object, T]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: object, make: Callable[[], T]) -> T:
        entries = self._entries
        hit = entries.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = make()
        entries[id(obj)] = (obj, value)
        if len(entries) > self.limit:
            entries.popitem(last=False)
        return value
