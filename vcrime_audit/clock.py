"""The world clock: minutes since the start of the episode, and clock times read against it.

A scenario's clock times ("23:30") are times of day. Each is read relative to the start: its
first occurrence is the first time the clock shows it at or after the start, so with a 22:00
start "23:30" is minute 90 and "01:00" is minute 180 (the next morning). An NPC schedule is a
daily routine: entry ``e`` recurs at ``offset(e) + 1440 k`` for k = 0, 1, 2, ...; a scenario
event is due once, from ``offset(event.at)`` on. Nothing here compares clock strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, TypeVar

DAY = 24 * 60


class Timed(Protocol):
    at: str


T = TypeVar("T", bound=Timed)


@lru_cache(maxsize=4096)
def time_of_day(clock: str) -> int:
    """Minutes after midnight of an "HH:MM" clock time."""
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def offset(clock: str, start: str) -> int:
    """Minutes from the start to the first occurrence of ``clock`` (0 to 1439)."""
    return (time_of_day(clock) - time_of_day(start)) % DAY


def clock_and_day(minutes: int, start: str) -> tuple[str, int]:
    """The "HH:MM" clock and the day (1 = the start day) ``minutes`` after the start."""
    absolute = time_of_day(start) + minutes
    return f"{absolute % DAY // 60:02d}:{absolute % 60:02d}", absolute // DAY + 1


def in_order(times: Sequence[str], start: str) -> bool:
    """Whether clock times follow each other within the 24 hours after the start."""
    offsets = [offset(t, start) for t in times]
    return offsets == sorted(offsets)


def next_occurrence(clock: str, now: int, start: str) -> int:
    """The first minute after ``now`` at which a daily ``clock`` time recurs."""
    first = offset(clock, start)
    if first > now:
        return first
    return first + ((now - first) // DAY + 1) * DAY


def upcoming(entries: Sequence[T], now: int, start: str) -> tuple[T, int] | None:
    """The daily schedule entry that comes next after ``now``, with its minute; ties go to the
    entry listed first."""
    best: tuple[T, int] | None = None
    for entry in entries:
        minute = next_occurrence(entry.at, now, start)
        if best is None or minute < best[1]:
            best = (entry, minute)
    return best


def due(clock: str, now: int, start: str) -> bool:
    """Whether a one-off clock time (a scenario event) has come by minute ``now``."""
    return offset(clock, start) <= now


def occurs_between(clock: str, after: int, upto: int, start: str) -> bool:
    """Whether a daily ``clock`` time recurs in the minutes (after, upto]."""
    return next_occurrence(clock, after, start) <= upto
