"""Background threads (journal, compression, store writer) run nicer than the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import os
import sys
import threading

import pytest

from vcrime_audit import background
from vcrime_audit.store.writer import StoreWriter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="a thread's own nice value is a Linux feature")
UNIT: contextvars.ContextVar[str] = contextvars.ContextVar("unit", default="none")


def own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def expected(loop_nice: int) -> int:
    return min(19, loop_nice + background.NICER)


def test_work_sent_to_the_background_runs_nicer_with_the_callers_context():
    async def main() -> tuple[int, int, str]:
        UNIT.set("turn 3")
        nice, unit = await background.to_thread(lambda: (own_nice(), UNIT.get()))
        return own_nice(), nice, unit

    loop_nice, nice, unit = asyncio.run(main())
    assert nice == expected(loop_nice) and unit == "turn 3"
    assert own_nice() == loop_nice  # the caller's thread is left as it was


def test_the_store_writer_thread_runs_nicer(tmp_path):
    writer = StoreWriter(tmp_path / "s.sqlite")
    try:
        nice = asyncio.run(writer.commit(lambda store: own_nice(), transaction=False))
    finally:
        writer.close()
    assert nice == expected(own_nice())


def test_a_refused_priority_leaves_the_thread_as_it_is(monkeypatch):
    def refuse(*args: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "setpriority", refuse)
    pool = background.executor("refused", 1)
    try:
        assert pool.submit(own_nice).result() == own_nice()
    finally:
        pool.shutdown()
