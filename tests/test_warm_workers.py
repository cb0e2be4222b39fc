"""Worker processes started early: all of them at once, warmed, then doing the real jobs."""

from __future__ import annotations

import gc
import sys

from vcrime_audit.warm_workers import process_pool, warm


def _state() -> tuple[bool, bool, bool]:
    from vcrime_audit.harm import default_lexicon

    screen = default_lexicon().screen
    return "vcrime_audit.verify" in sys.modules, screen is not None and screen._ready, gc.isenabled()  # noqa: SLF001


def test_every_process_starts_at_once_and_is_warm_before_its_first_job():
    pool = process_pool(2, ("vcrime_audit.verify", "vcrime_audit.harm:prepare_default_lexicon"))
    try:
        assert len(pool._processes) == 2  # noqa: SLF001 -- spawned by the warm-ups, not by later jobs
        states = [f.result() for f in [pool.submit(_state) for _ in range(4)]]
        assert states == [(True, True, False)] * 4  # imported, lexicon ready, collector off
    finally:
        pool.shutdown()


def test_a_target_that_fails_leaves_the_pool_working():
    pool = process_pool(1, ("vcrime_audit.no_such_module",))
    try:
        assert pool.submit(sum, [1, 2]).result() == 3
    finally:
        pool.shutdown()


def test_warm_imports_and_calls_in_order(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr("vcrime_audit.harm.prepare_default_lexicon", lambda: calls.append("ready"))
    warm(("vcrime_audit.harm", "vcrime_audit.harm:prepare_default_lexicon"))
    assert calls == ["ready"] and "vcrime_audit.harm" in sys.modules
