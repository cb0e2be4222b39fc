"""Forked: a child's value is the value computed here; a failure surfaces here; cancel stops it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

from vcrime_audit.audit import forked
from vcrime_audit.audit.forked import Forked


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
