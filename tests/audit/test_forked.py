"""Forked and Prepared: a child's value is the value computed here; a failure surfaces here; cancel
stops it; Prepared's arguments reach a child that is still preparing."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

from vcrime_audit.audit import forked
from vcrime_audit.audit.forked import Forked, Prepared


def resample(seed: int, size: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, size=(size, 40)).mean(axis=1)


def test_a_big_value_from_the_child_equals_the_value_computed_here(monkeypatch):
    job = Forked(resample, 7, size=50_000)  # ~400 KB: more than a pipe holds at once
    from_child = job.result()
    assert job.result() is from_child, "computed once"
    monkeypatch.setattr(forked.os, "cpu_count", lambda: 1)
    assert np.array_equal(from_child, Forked(resample, 7, size=50_000).result())


def only_in(parent: int) -> int:
    if os.getpid() != parent:
        raise ValueError("fails in any other process")
    return os.getpid()


def test_the_value_comes_from_a_child_and_a_failure_surfaces_in_this_process():
    assert Forked(os.getpid).result() != os.getpid()
    assert Forked(only_in, os.getpid()).result() == os.getpid(), "a failed child: computed here"

    def fails_everywhere():
        raise KeyError("no such cell")

    with pytest.raises(KeyError, match="no such cell"):
        Forked(fails_everywhere).result()


def test_cancel_stops_the_child():
    job = Forked(time.sleep, 600)
    child = job._child
    job.cancel()
    assert child.exitcode == -signal.SIGTERM, "terminated, not waited for"
    assert multiprocessing.active_children() == []


PREPARED: dict[str, object] = {}


def wait_for(path: str) -> None:
    """A prepare step that takes until `path` exists (20 s at most) and notes whether it did."""
    deadline = time.monotonic() + 20
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    PREPARED["saw"] = os.path.exists(path)


def prepared_state(payload: np.ndarray) -> tuple[object, int, float]:
    return PREPARED.get("saw"), os.getpid(), float(payload.sum())


def test_prepared_is_sent_its_arguments_while_the_child_is_still_preparing(tmp_path):
    flag = str(tmp_path / "flag")
    job = Prepared(lambda: wait_for(flag), prepared_state)
    payload = resample(3, 200_000)  # 1.6 MB: start() would block on the pipe if it sent in this thread
    job.start(payload)
    open(flag, "w").close()  # reached before the child's 20 s only if start() returned at once
    saw, pid, total = job.result()
    assert saw is True, "the child prepared first, then computed"
    assert pid != os.getpid()
    assert total == float(payload.sum())


def fails() -> None:
    raise OSError("no fonts")


def test_a_failed_prepare_is_only_a_lost_head_start_and_one_cpu_computes_here(monkeypatch):
    job = Prepared(fails, resample)
    job.start(5, size=1000)
    assert np.array_equal(job.result(), resample(5, size=1000))
    monkeypatch.setattr(forked.os, "cpu_count", lambda: 1)
    here = Prepared(fails, os.getpid)
    assert here._child is None, "nothing forked on one CPU"
    here.start()
    assert here.result() == os.getpid()


def test_unsendable_arguments_are_computed_here_and_failures_surface_here():
    job = Prepared(_nothing, only_in)
    job.start(os.getpid())
    assert job.result() == os.getpid(), "the child fails: computed here"
    lock = threading.Lock()  # cannot be pickled: the child is sent nothing and answers nothing
    unsent = Prepared(_nothing, lambda _lock, pid: pid)
    unsent.start(lock, os.getpid())
    assert unsent.result() == os.getpid()
    with pytest.raises(RuntimeError, match="never started"):
        Prepared(_nothing, os.getpid).result()


def _nothing() -> None:
    return None


def test_cancel_stops_a_prepared_child_before_or_after_start():
    waiting = Prepared(None, os.getpid)  # nothing to prepare
    child = waiting._child
    waiting.cancel()
    assert child.exitcode in (0, -signal.SIGTERM)
    busy = Prepared(lambda: time.sleep(600), os.getpid)
    child = busy._child
    busy.start()
    busy.cancel()
    assert child.exitcode == -signal.SIGTERM, "terminated, not waited for"
    assert multiprocessing.active_children() == []


STEPS: dict[str, int] = {}


def slow_steps():
    """A preparation of 2,000 steps of 10 ms (20 s) that notes how far it got."""
    for step in range(2000):
        time.sleep(0.01)
        STEPS["taken"] = step + 1
        yield


def steps_taken(pid: int) -> tuple[int, bool]:
    return STEPS.get("taken", 0), os.getpid() != pid


def test_a_preparation_in_steps_is_left_as_soon_as_the_arguments_arrive():
    job = Prepared(slow_steps, steps_taken)
    time.sleep(0.3)
    started = time.monotonic()
    job.start(os.getpid())
    taken, in_child = job.result()
    assert in_child
    assert 1 <= taken < 2000, "it prepared, and stopped once the arguments were there"
    assert time.monotonic() - started < 10, "the function did not wait for the whole preparation"
