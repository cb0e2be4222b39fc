"""Kill an episode with SIGKILL at many points; a resume must give the uninterrupted rows and a
cassette that verifies.

The episode's "model" is the committed demo cassette played back through a second cassette (so the
test needs no model and every answer is the recorded one); the new recording, the store and the
kill are real. One live test does the same with the embedded model.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vcrime_audit.cassette import Cassette, RecordingBackend, RecordMode
from vcrime_audit.cassette.persist import journal_path
from vcrime_audit.recorder import KILL_ENV
from vcrime_audit.runner import RunConfig, _from_meta, run_episode
from vcrime_audit.statuses import RUNNING
from vcrime_audit.store import Store
from vcrime_audit.store.db import decision_rows, trajectory_rows
from vcrime_audit.verify import Verifier

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "cassettes" / "robotics_company__data_theft-s0-e3005c10.jsonl.gz"

CHILD = """
import asyncio, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.test_crash_resume import play
print("ready", flush=True)
asyncio.run(play(Path({work!r})))
"""


def demo_config() -> RunConfig:
    config, _, _ = _from_meta(Cassette(DEMO, RecordMode.none))
    return config


async def play(work: Path, mode: RecordMode = RecordMode.new):
    """Record the demo episode into ``work`` with the demo cassette as the model."""
    model = RecordingBackend(Cassette(DEMO, RecordMode.none))
    return await run_episode(demo_config(), work / "store.sqlite", work / "cassettes", mode,
                             backend=model)


def rows(db: Path, run_id: str) -> dict:
    store = Store(db)
    run = {k: v for k, v in store.run(run_id).items()
           if k not in ("started_at", "finished_at", "cassette", "writer")}
    return {"run": run, **trajectory_rows(store, run_id),
            "harm": store.rows("harm", run_id)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("reference")
    outcome = asyncio.run(play(work))
    return rows(work / "store.sqlite", outcome.run_id)


def kill_child(work: Path, env: dict[str, str], delay: float | None) -> int:
    code = CHILD.format(root=str(ROOT), work=str(work))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env={**os.environ, **env}, text=True)
    assert child.stdout is not None
    child.stdout.readline()
    if delay is not None:
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
    child.wait(timeout=120)
    return child.returncode


POINTS = (["start:1"] + [f"flush:{n}" for n in (1, 2, 3)] + [f"commit:{n}" for n in (1, 2, 3)]
          + ["summary:1", "finish:1"])


@pytest.mark.parametrize("case", [*POINTS, *(f"random:{i}" for i in range(23))])
def test_a_killed_episode_resumes_to_the_uninterrupted_rows(case, reference, tmp_path):
    point, _, n = case.partition(":")
    if point == "random":
        code = kill_child(tmp_path, {}, random.Random(int(n)).uniform(0.0, 0.4))
    else:
        code = kill_child(tmp_path, {KILL_ENV: case}, None)
        assert code == -signal.SIGKILL, f"the kill point {case} was never reached"
    run_id = demo_config().run_id()
    db = tmp_path / "store.sqlite"
    if code == -signal.SIGKILL and db.exists():
        row = Store(db).run(run_id)
        assert row is None or row["status"] == RUNNING or point in ("finish", "random"), row

    outcome = asyncio.run(play(tmp_path))
    assert outcome.check.ok
    assert rows(db, run_id) == reference
    cassette = tmp_path / "cassettes" / f"{run_id}.jsonl.gz"
    assert cassette.exists() and not journal_path(cassette).exists()
    verifier = Verifier([tmp_path / "cassettes"])
    try:
        assert not verifier.store(db)
        assert [v.state for v in verifier.verdicts] == ["verified"], verifier.verdicts
    finally:
        verifier.close()


@pytest.mark.live
def test_a_killed_live_episode_resumes_to_the_uninterrupted_rows(tmp_path, live_one_turn, tiny_task):
    """The embedded model: one turn, killed between the last commit and the finish; the resumed
    run equals an uninterrupted live run in everything but the calls' wall-clock times."""
    config = RunConfig(task=tiny_task, max_turns=1)
    code = ("import asyncio\nfrom pathlib import Path\nfrom vcrime_audit.runner import RunConfig, "
            "run_episode\nprint('ready', flush=True)\n"
            f"asyncio.run(run_episode(RunConfig(task={tiny_task!r}, max_turns=1), "
            f"Path({str(tmp_path / 'a.sqlite')!r}), Path({str(tmp_path / 'a')!r})))\n")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, KILL_ENV: "summary:1"}, timeout=900, cwd=ROOT)
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert Store(tmp_path / "a.sqlite").run(config.run_id())["status"] == RUNNING
    resumed = asyncio.run(run_episode(config, tmp_path / "a.sqlite", tmp_path / "a", RecordMode.new))
    assert resumed.model_calls == 0 and resumed.check.ok
    run_id, a, b = config.run_id(), Store(tmp_path / "a.sqlite"), Store(live_one_turn.store)
    assert live_one_turn.run_id == run_id
    assert decision_rows(a, run_id) == decision_rows(b, run_id)
    assert a.rows("harm", run_id) == b.rows("harm", run_id)
    assert a.run(run_id)["status"] == b.run(run_id)["status"] == live_one_turn.status
