"""`study --processes N`: worker processes share the grid and the store. The rows equal one
process's; each run is played once; a worker killed mid-study is named and its runs resume; bad
input in a worker is one line. The model is the scripted backend (real processes, a real store)."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.committed import STUDY_DEMO_RUNS
from tests.scripted_study import scripted_spec
from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cli import app
from vcrime_audit.statuses import RUNNING
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import trajectory_rows
from vcrime_audit.study import grid, load_study, run_study
from vcrime_audit.study_processes import (
    RunCounter,
    WorkerError,
    play_share,
    run_study_processes,
    share_of,
    study_worker,
)

ROOT = Path(__file__).resolve().parent.parent
spec = scripted_spec


def rows(db: Path, run_ids: list[str]) -> dict:
    store = Store(db)
    try:
        return {r: (store.run(r)["status"], store.run(r)["turns"], store.run(r)["turn_rows_hash"],
                    turn_rows_hash(store, r), trajectory_rows(store, r)) for r in run_ids}
    finally:
        store.close()


@pytest.fixture
def reference(registry, tmp_path):
    """The study played in this process: its spec and rows."""
    study = spec(tmp_path / "one")
    result = asyncio.run(run_study(study))
    assert result.done == len(grid(study)) == 6 and not result.crashed
    return study, rows(study.db, [c.run_id() for c in grid(study)])


def test_two_processes_write_the_rows_one_process_writes_each_run_once(reference, tmp_path):
    one, expected = reference
    study = spec(tmp_path / "two")
    turns: list[str] = []
    result = run_study_processes(study, 2, on_turn=turns.append)
    run_ids = [c.run_id() for c in grid(study)]
    assert sorted(o.run_id for o in result.outcomes) == sorted(run_ids)
    assert result.done == 6 and result.skipped == 0 and not result.crashed
    assert result.turns == len(turns) == sum(o.turns for o in result.outcomes)
    assert Counter(turns) == {o.run_id: o.turns for o in result.outcomes}
    assert rows(study.db, run_ids) == expected
    for run_id in run_ids:  # each run recorded once: one cassette, no call twice
        keys = [c["key"] for c in Cassette(study.cassette_dir / f"{run_id}.jsonl.gz", RecordMode.none).calls]
        assert keys and len(keys) == len(set(keys))
    again = run_study_processes(study, 2)
    assert again.skipped == 6 and again.done == 0


def die_after_a_turn(task):
    """Worker 1 is killed (SIGKILL) right after its first turn reaches the store. Worker 2 takes
    no run before worker 1 has taken one: runs are handed out as workers ask, and a worker 2 that
    started first could otherwise play all six (worker 1 would then never play a turn)."""
    took = task.study.db.parent / "worker-1-took-a-run"
    take = task.take
    if task.index == 0:
        def die(run_id):
            os.kill(os.getpid(), signal.SIGKILL)

        def take_and_mark():
            index = take()
            took.touch()
            return index
        task.turn, task.take = die, take_and_mark
    else:
        def take_after_worker_1():
            deadline = time.monotonic() + 60
            while not took.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return take()
        task.take = take_after_worker_1
    return play_share(task)


def test_a_killed_worker_is_named_its_runs_go_to_the_others_and_resume(reference, tmp_path):
    one, expected = reference
    study = spec(tmp_path / "killed")
    with pytest.raises(WorkerError) as info:
        run_study_processes(study, 2, worker=functools.partial(study_worker, play=die_after_a_turn))
    message = str(info.value)
    assert message.startswith("study worker 1 of 2 was ended by signal 9 before it finished; fix: ")
    assert "\n" not in message
    store = Store(study.db)
    statuses = Counter(r["status"] for r in store.runs())
    store.close()
    assert 1 <= statuses[RUNNING] <= share_of(study.concurrency, 0, 2)  # only the dead worker's
    assert sum(statuses.values()) - statuses[RUNNING] == 6 - statuses[RUNNING]  # the rest finished
    resumed = run_study_processes(study, 2)
    assert resumed.done == statuses[RUNNING] and resumed.skipped == 6 - statuses[RUNNING]
    assert rows(study.db, [c.run_id() for c in grid(study)]) == expected


def test_the_run_counter_hands_out_each_index_once_across_connections(tmp_path):
    counter = RunCounter(tmp_path / "next.sqlite").create()
    other = RunCounter(counter.path)
    taken = [c.take(5) for c in (counter, other, counter, other, counter, other, counter)]
    assert taken == [0, 1, 2, 3, 4, None, None]


def test_concurrency_is_split_between_workers_as_evenly_as_whole_numbers_allow():
    for concurrency in range(1, 40):
        for workers in range(1, 6):
            shares = [share_of(concurrency, i, workers) for i in range(workers)]
            assert sum(shares) == concurrency and max(shares) - min(shares) <= 1


def test_the_command_replays_the_committed_study_in_two_processes(tmp_path):
    cassettes = tmp_path / "cassettes"
    cassettes.mkdir()
    for path in STUDY_DEMO_RUNS:
        (cassettes / path.name).write_bytes(path.read_bytes())
    demo = ROOT / "studies" / "demo.yaml"
    runner = CliRunner()
    result = runner.invoke(app, ["study", str(demo), "--replay", "--processes", "2", "--db",
                                 str(tmp_path / "two.sqlite"), "--cassette-dir", str(cassettes)])
    assert result.exit_code == 0, result.output
    one = load_study(demo).model_copy(update={"db": tmp_path / "one.sqlite", "cassette_dir": cassettes})
    asyncio.run(run_study(one, replay_only=True))
    run_ids = [c.run_id() for c in grid(one)]
    assert f"{len(run_ids)} run(s) played" in result.output
    run_lines = [line for line in result.output.splitlines() if line.startswith("  ")]
    assert [line.split(":")[0].strip() for line in run_lines] == sorted(run_ids)
    assert all("identical turn rows" in line for line in run_lines)
    assert rows(tmp_path / "two.sqlite", run_ids) == rows(one.db, run_ids)


@pytest.mark.parametrize("args, says", [
    (["--processes", "0"], "--processes: 0 is not allowed; fix: use at least 1 process"),
    (["--processes", "2", "--executor", "ray"], "--processes is for --executor local; fix: "),
])
def test_bad_process_options_are_one_line(args, says):
    result = CliRunner().invoke(app, ["study", str(ROOT / "studies" / "demo.yaml"), *args])
    assert result.exit_code == 2 and says in result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_bad_input_met_in_the_workers_is_one_line(registry, tmp_path):
    study = spec(tmp_path / "bad", judge="no-such-judge")
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study.model_dump(mode="json")), encoding="utf-8")
    result = CliRunner().invoke(app, ["study", str(config), "--processes", "2"])
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.output.splitlines() if "no-such-judge" in line]
    assert line.startswith("error: unknown model") and "known models: scripted-attacker" in line
    assert result.output.count("error") == 1 and "Traceback" not in result.output
    with sqlite3.connect(study.db) as conn:  # no run was claimed
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (0,)


@pytest.mark.parametrize("processes", [1, 2])
def test_an_interrupted_study_marks_its_runs_crashed_and_resumes_to_the_same_rows(
        processes, registry, tmp_path):
    for entry in registry.glob("*.yaml"):  # slow answers: the study is still going when interrupted
        data = yaml.safe_load(entry.read_text(encoding="utf-8"))
        entry.write_text(yaml.safe_dump({**data, "options": {"latency_ms": 200}}), encoding="utf-8")
    whole = spec(tmp_path / "whole", concurrency=6)  # the rows keep each call's time: same latency
    asyncio.run(run_study(whole))
    run_ids = [c.run_id() for c in grid(whole)]
    study = spec(tmp_path / "interrupted", concurrency=6)
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study.model_dump(mode="json")), encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "vcrime_audit.cli", "study", str(config), "--processes",
                              str(processes)], cwd=ROOT, start_new_session=True, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             preexec_fn=_ctrl_c_as_at_a_terminal)
    deadline = time.monotonic() + 120
    while not _turns_committed(study.db) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(child.pid, signal.SIGINT)  # Ctrl-C reaches the whole process group
    output, _ = child.communicate(timeout=120)
    assert child.returncode == 130 and "Traceback" not in output, output
    store = Store(study.db)
    statuses = Counter(r["status"] for r in store.runs())
    store.close()
    assert statuses["crashed"] >= 1 and statuses[RUNNING] == 0, statuses
    resumed = run_study_processes(study, processes)  # the crashed runs and those not started
    assert resumed.skipped == sum(statuses.values()) - statuses["crashed"] and not resumed.crashed
    assert resumed.done == 6 - resumed.skipped >= statuses["crashed"]
    assert rows(study.db, run_ids) == rows(whole.db, run_ids)


def _ctrl_c_as_at_a_terminal() -> None:
    """SIGINT's default action in the study: a test suite started as a background job of a
    non-interactive shell (``bash .ci/run &``) has SIGINT ignored, every process below it
    inherits that, and Python then leaves it ignored, so the study never saw the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _turns_committed(db: Path) -> bool:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT coalesce(sum(turns), 0) FROM runs").fetchone()[0] > 0
    except sqlite3.Error:
        return False
