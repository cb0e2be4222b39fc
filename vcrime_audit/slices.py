"""Time slices of the event loop, taken in turn by the jobs that share it.

A study keeps hundreds of runs in flight on one event loop. When a model server answers many of
them at about the same moment, every answer's continuation (parse it, apply it, build the next
prompt: ~1 ms each) becomes ready in the same pass of the loop, and asyncio runs them all before
it looks at anything else: 256 answers held the loop for a quarter of a second, while timers,
sockets and other answers waited. :func:`take_turn` bounds that: a job whose answer arrives after
the loop has been busy for a slice (:data:`SLICE_S`) waits for the loop to come round first, and
the waiting jobs go on in the order they arrived, about a slice's worth per pass.

Nothing is skipped or reordered within a job; only when each job's next step starts.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Callable

SLICE_S = 0.010
"""How long the loop may run answers' continuations before it serves its timers and sockets."""


class LoopSlices:
    """The slices of the event loop that runs it (kept per loop by :func:`take_turn`; it holds
    no reference to the loop, so a closed loop is freed with its slices)."""

    def __init__(self, slice_s: float = SLICE_S, clock: Callable[[], float] = time.perf_counter) -> None:
        self.slice_s, self.clock = slice_s, clock
        self.started = clock()
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._round_due = False
        self._ran = 0
        self._per_round = 1

    async def take_turn(self) -> None:
        """Return at once while the current slice lasts and nobody waits; else wait in line."""
        while self._waiting or self.clock() - self.started >= self.slice_s:
            if not self._waiting and not self._round_due:
                self._per_round = max(1, self._ran)
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._waiting.append(future)
            if not self._round_due:
                self._round_due = True
                loop.call_soon(self._new_round)
            try:
                await future
            except BaseException:  # cancelled in line: leave no future (nor its loop) behind
                if future in self._waiting:
                    self._waiting.remove(future)
                raise
            if self.clock() - self.started < self.slice_s:
                break
        self._ran += 1

    def _new_round(self) -> None:
        """Runs once the handles ready before it have run (a due timer among them): a new slice,
        for about as many waiting jobs as the last slice held."""
        self._round_due = False
        self.started = self.clock()
        self._ran = 0
        for _ in range(min(self._per_round, len(self._waiting))):
            future = self._waiting.popleft()
            if not future.done():
                future.set_result(None)
        if self._waiting:
            self._round_due = True
            asyncio.get_running_loop().call_soon(self._new_round)


_SLICES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopSlices] = weakref.WeakKeyDictionary()


async def take_turn() -> None:
    """:meth:`LoopSlices.take_turn` of the running loop."""
    loop = asyncio.get_running_loop()
    slices = _SLICES.get(loop)
    if slices is None:
        slices = _SLICES[loop] = LoopSlices()
    await slices.take_turn()
