"""Progress of long commands, as an observer the library calls and the command line renders.

Library code marks work with ``with progress("rejudge", total) as tick: tick("item label")``;
it costs nothing unless a command installed an observer with :func:`observing`. The command line
installs :class:`RichObserver` (a bar with an ETA on a terminal, one plain line per step
otherwise). Tests install any object with the :class:`Observer` methods.

ETA definition: (total - done) x (seconds since start / done), shown once one step is done.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO


class Observer(Protocol):
    def started(self, task: Task) -> None: ...

    def advanced(self, task: Task, label: str) -> None: ...

    def finished(self, task: Task) -> None: ...


@dataclass
class Task:
    """One tracked job: ``done`` of ``total`` steps (``total`` may be unknown: ``None``)."""

    name: str
    total: int | None
    done: int = 0
    started_at: float = field(default_factory=time.perf_counter)

    def elapsed(self) -> float:
        return time.perf_counter() - self.started_at

    def eta(self) -> float | None:
        """Seconds left at the mean pace so far; ``None`` before the first step or without a total."""
        if not self.done or self.total is None:
            return None
        return max(self.total - self.done, 0) * self.elapsed() / self.done


_observer: ContextVar[Observer | None] = ContextVar("vcrime_progress_observer", default=None)


class Tick:
    """Advance a task by one step; ``tick.total = n`` sets a total found out later."""

    def __init__(self, task: Task, observer: Observer | None) -> None:
        self.task, self.observer = task, observer

    def __call__(self, label: str = "") -> None:
        self.task.done += 1
        if self.observer is not None:
            self.observer.advanced(self.task, label)

    @property
    def total(self) -> int | None:
        return self.task.total

    @total.setter
    def total(self, value: int | None) -> None:
        self.task.total = value


@contextmanager
def progress(name: str, total: int | None = None) -> Iterator[Tick]:
    """Track one job under the current observer (none: nothing is shown)."""
    observer = _observer.get()
    task = Task(name, total)
    if observer is not None:
        observer.started(task)
    try:
        yield Tick(task, observer)
    finally:
        if observer is not None:
            observer.finished(task)


@contextmanager
def observing(observer: Observer) -> Iterator[Observer]:
    """Send every :func:`progress` inside the block (threads and event loops started from it
    included) to ``observer``."""
    token = _observer.set(observer)
    try:
        yield observer
    finally:
        _observer.reset(token)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}:{seconds % 60:02d}"


def plain_line(task: Task, label: str) -> str:
    total = "?" if task.total is None else str(task.total)
    tail = f"  {label}" if label else ""
    return (f"{task.name} {task.done}/{total}  elapsed {duration(task.elapsed())}  "
            f"eta {duration(task.eta())}{tail}")


class RichObserver:
    """A rich progress bar with ETA on a terminal; plain lines (one per step) otherwise."""

    def __init__(self, stream: TextIO | None = None, force_plain: bool | None = None) -> None:
        from rich.console import Console

        self.console = Console(file=stream or sys.stderr)
        self.plain = (not self.console.is_terminal) if force_plain is None else force_plain
        self._bar: Any = None
        self._ids: dict[int, Any] = {}

    def started(self, task: Task) -> None:
        if self.plain:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        if self._bar is None:
            self._bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("eta"),
                                 TimeRemainingColumn(), TextColumn("{task.fields[label]}"),
                                 console=self.console)
            self._bar.start()
        self._ids[id(task)] = self._bar.add_task(task.name, total=task.total, label="")

    def advanced(self, task: Task, label: str) -> None:
        if self.plain:
            self.console.print(plain_line(task, label), highlight=False, markup=False, soft_wrap=True)
            return
        self._bar.update(self._ids[id(task)], completed=task.done, total=task.total, label=label)

    def finished(self, task: Task) -> None:
        if self.plain or self._bar is None:
            return
        self._bar.remove_task(self._ids.pop(id(task)))
        if not self._ids:
            self._bar.stop()
            self._bar = None


def on_stderr() -> Any:
    """``with on_stderr(): ...`` shows every progress inside on stderr (for the command line)."""
    return observing(RichObserver())


class TurnLines:
    """`run`'s observer: one line per turn with the turn of the limit, calls made and replayed so
    far, model seconds so far (the sum of the calls' ``seconds``; for replayed calls the time
    recorded with them) and the turn's action and outcome."""

    def __init__(self, max_turns: int, stream: TextIO | None = None) -> None:
        from rich.console import Console

        self.console = Console(file=stream or sys.stderr)
        self.max_turns = max_turns
        self.backend: Any = None
        self.model_seconds = 0.0

    def bind(self, backend: Any) -> None:
        """The episode's recording backend, whose counters say what was called and replayed."""
        self.backend = backend

    def line(self, record: Any) -> str:
        self.model_seconds += sum(c.seconds for c in record.calls)
        made = getattr(self.backend, "model_calls", 0)
        replayed = getattr(self.backend, "replayed", 0)
        action = record.action
        did = f"{action.actor} {action.verb}: {action.description}" if action else "no action"
        outcome = record.outcome["type"] if record.outcome else record.status
        if len(did) > 70:
            did = did[:69] + "…"
        return (f"turn {record.turn}/{self.max_turns}  calls {made} made, {replayed} replayed  "
                f"model {self.model_seconds:.1f} s  {did} -> {outcome}")

    def __call__(self, run_id: str, record: Any) -> None:
        self.console.print(self.line(record), highlight=False, markup=False, soft_wrap=True)
