"""Worker processes started early: all of them at once, warmed, then doing the real jobs."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import yaml

from tests.committed import CASSETTES, DEMO_RUN
from tests.scripted_study import scripted_spec
from vcrime_audit.warm_workers import process_pool, start_processes, warm


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


def test_a_target_that_fails_is_left_to_the_job_that_needs_it():
    """A failing warm-up target neither ends a started process (its job still runs) nor spoils
    the later targets; in a pool, the warm-up's future would hold the error unread anyway."""
    [started] = start_processes(1, ("vcrime_audit.no_such_module", "vcrime_audit.harm:no_such_function",
                                    "vcrime_audit.study_processes"), "test-warm")
    started.give(_report)
    assert started.events.recv()[2]  # the target after the failing ones was imported
    started.process.join(timeout=30)
    assert started.process.exitcode == 0
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


def _report(events) -> None:
    events.send(("pid", os.getpid(), "vcrime_audit.study_processes" in sys.modules))
    events.close()


def test_started_processes_run_the_job_given_and_dismissed_ones_exit_cleanly():
    started = start_processes(3, ("vcrime_audit.study_processes",), "test-warm")
    used, spare = started[:2], started[2:]
    for process in used:
        process.give(_report)
    for process in spare:
        process.dismiss()
    reports = [process.events.recv() for process in used]
    assert [r[0] for r in reports] == ["pid", "pid"] and all(r[2] for r in reports)
    assert sorted(r[1] for r in reports) == sorted(p.process.pid for p in used)
    for process in started:
        process.process.join(timeout=30)
        assert process.process.exitcode == 0


def _session_empties(session: int, seconds: float = 10.0) -> bool:
    """Whether every process of the session ends within ``seconds`` (multiprocessing's resource
    tracker ends a moment after the command that started it)."""
    deadline = time.monotonic() + seconds
    while subprocess.run(["pgrep", "-s", str(session)], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_study_with_more_processes_than_runs_or_bad_input_leaves_no_process(registry, tmp_path):
    """Workers start before the study file is read: those not needed, and all of them when the
    file is bad, are dismissed; the command ends as before (real processes, the scripted model)."""
    study = scripted_spec(tmp_path / "many")
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study.model_dump(mode="json")), encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("attackers: [\n", encoding="utf-8")
    for path, code in ((config, 0), (bad, 2), (config, 0)):  # the second good one: all skipped
        command = subprocess.Popen([sys.executable, "-m", "vcrime_audit.cli", "study", str(path),
                                    "--processes", "12"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   text=True, start_new_session=True)
        output = command.communicate(timeout=300)[0]
        assert command.returncode == code, output
        assert "Traceback" not in output
        if code == 2:
            assert output.strip().count("\n") == 0, output
        assert _session_empties(command.pid), f"processes left in the command's session ({path.name})"
    assert "6 already finished" in output


def test_the_processes_a_study_does_not_need_are_dismissed_before_it_plays(registry, tmp_path):
    from vcrime_audit.study import grid
    from vcrime_audit.study_processes import run_study_processes

    study = scripted_spec(tmp_path / "spare")
    started = start_processes(8, (), "test-spare")
    result = run_study_processes(study, 8, started=started)
    assert result.done == len(grid(study)) == 6
    workers = min(8, 6, study.concurrency)
    assert [p.process.exitcode for p in started] == [0] * 8  # every one ended: played, or dismissed
    assert all(p.jobs.closed for p in started[workers:])
    again = start_processes(2, (), "test-spare")
    assert run_study_processes(study, 2, started=again).skipped == 6  # nothing to play: both dismissed
    assert [p.process.exitcode for p in again] == [0, 0]


def _children(pid: int) -> list[str]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return found.stdout.split()


def test_a_pools_workers_end_when_the_command_that_started_them_is_killed(tmp_path):
    """``verify --workers 2`` killed (its workers wait on a queue whose writing end they hold, so
    they never see it go): its workers end too, whether they were still starting or warm."""
    db = tmp_path / "one.sqlite"
    subprocess.run([sys.executable, "-m", "vcrime_audit.cli", "replay", str(DEMO_RUN), "--db", str(db)],
                   check=True, capture_output=True)
    for sig in (signal.SIGKILL, signal.SIGTERM):
        command = subprocess.Popen([sys.executable, "-m", "vcrime_audit.cli", "verify", "--db", str(db),
                                    "--workers", "2", str(CASSETTES)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while len(_children(command.pid)) < 3 and command.poll() is None:  # 2 workers, 1 tracker
            assert time.monotonic() < deadline, "the pool never started"
            time.sleep(0.01)
        assert command.poll() is None, "verify ended before it was killed"
        os.kill(command.pid, sig)
        command.wait(timeout=30)
        assert _session_empties(command.pid, 20), f"workers left after {sig.name}"


_IDLE_POOL = """
import os, sys, time
from vcrime_audit.warm_workers import process_pool
pool = process_pool(2, ())
pids = set()
while len(pids) < 2:
    pids |= {pool.submit(os.getpid).result() for _ in range(8)}
print(*pids, flush=True)
time.sleep(600)
"""


def test_a_pools_idle_workers_end_when_their_parent_is_killed():
    """Warm workers waiting for their next job end with the process that started them."""
    parent = subprocess.Popen([sys.executable, "-c", _IDLE_POOL], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    workers = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(str(w) in _children(parent.pid) for w in workers)
    parent.kill()
    parent.wait(timeout=30)
    assert _session_empties(parent.pid, 20), "idle workers outlived their parent"
