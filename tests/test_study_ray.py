"""`study --executor ray` on a real local Ray cluster (2 CPUs, one per module): the merged store
equals the local executor's, every run verifies, and a worker killed mid-episode is retried and
resumes from its journal without recording a call twice. The model is the scripted backend."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import ray
import yaml
from typer.testing import CliRunner

from vcrime_audit.cassette import Cassette, RecordMode
from vcrime_audit.cassette.persist import journal_path
from vcrime_audit.cli import app
from vcrime_audit.statuses import RUNNING
from vcrime_audit.store import Store, turn_rows_hash
from vcrime_audit.store.db import trajectory_rows
from vcrime_audit.study import StudyConfig, grid, run_study
from vcrime_audit.study_ray import run_study_ray, shard_folder

TASKS = ["robotics_company__data_theft", "robotics_company__theft"]
LATENCY_MS = 60


def write_registry(root: Path) -> Path:
    models = root / "local_models"
    models.mkdir(parents=True)
    for name in ("scripted-attacker", "scripted-judge", "scripted-wm"):
        entry = {"name": name, "description": "Scripted answers (no model); tests only.",
                 "backend": "scripted", "family": name, "vendor": "scripted",
                 "weights": {"install": "nothing to install"},
                 "options": {"latency_ms": LATENCY_MS}}
        (models / f"{name}.yaml").write_text(yaml.safe_dump(entry), encoding="utf-8")
    return models


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """The scripted registry (set before Ray starts, so its workers inherit it) and a local
    Ray cluster of 2 CPUs for the whole module."""
    models = write_registry(tmp_path_factory.mktemp("registry"))
    saved = os.environ.get("VCRIME_MODELS")
    os.environ["VCRIME_MODELS"] = str(models)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield
    ray.shutdown()
    if saved is None:
        os.environ.pop("VCRIME_MODELS", None)
    else:
        os.environ["VCRIME_MODELS"] = saved


def spec(folder: Path, seeds: list[int], concurrency: int = 2) -> StudyConfig:
    folder.mkdir(parents=True, exist_ok=True)
    return StudyConfig(name="ray-test", attackers=["scripted-attacker"], judge="scripted-judge",
                       world_manager="scripted-wm", backend="scripted", tasks=TASKS, seeds=seeds,
                       max_turns=2, stall_turns=30, concurrency=concurrency,
                       db=folder / "study.sqlite", cassette_dir=folder / "cassettes")


def rows(db: Path, run_ids: list[str]) -> dict:
    store = Store(db)
    try:
        out = {}
        for run_id in run_ids:
            run = store.run(run_id)
            out[run_id] = (run["status"], run["turns"], run["turn_rows_hash"], turn_rows_hash(store, run_id),
                           trajectory_rows(store, run_id))
        return out
    finally:
        store.close()


def calls(cassette: Path) -> list[str]:
    """The request keys a finished cassette holds, in order."""
    return [c["key"] for c in Cassette(cassette, RecordMode.none).calls]


@pytest.fixture(scope="module")
def local_reference(cluster, tmp_path_factory):
    """The local (asyncio) executor's rows and cassettes for seeds 0 and 1."""
    study = spec(tmp_path_factory.mktemp("local"), [0, 1])
    result = asyncio.run(run_study(study))
    assert result.done == 4 and not result.crashed
    return study


def test_the_ray_executor_merges_the_local_executors_rows_and_verifies_every_run(
        local_reference, tmp_path):
    study = spec(tmp_path / "ray", [0, 1])
    config = tmp_path / "study.yaml"
    config.write_text(yaml.safe_dump(study.model_dump(mode="json")), encoding="utf-8")
    result = CliRunner().invoke(app, ["study", str(config), "--executor", "ray"])
    assert result.exit_code == 0, result.output
    assert "verified  4 merged run(s)" in result.output and "0 with problems" in result.output
    run_ids = [c.run_id() for c in grid(study)]
    assert rows(study.db, run_ids) == rows(local_reference.db, run_ids)
    for run_id in run_ids:
        assert calls(study.cassette_dir / f"{run_id}.jsonl.gz") == \
            calls(local_reference.cassette_dir / f"{run_id}.jsonl.gz")
    assert not shard_folder(study).exists(), "merged shard stores are removed"

    again = CliRunner().invoke(app, ["study", str(config), "--executor", "ray"])
    assert again.exit_code == 0 and "0 run(s) played, 4 already finished" in again.output


def kill_mid_episode(shards: Path, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first worker seen writing a run that has committed a turn but not finished."""
    while not stop.is_set():
        for db in shards.glob("*.sqlite"):
            try:
                with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
                    found = conn.execute("SELECT r.writer, r.status, count(t.turn) FROM runs r "
                                         "LEFT JOIN turns t ON t.run_id = r.run_id GROUP BY r.run_id"
                                         ).fetchall()
            except sqlite3.Error:
                continue
            for writer, status, turns in found:
                if status == RUNNING and writer and turns >= 1:
                    pid = int(writer.rpartition(":")[2])
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
        time.sleep(0.02)


def test_a_killed_worker_is_retried_and_resumes_to_the_same_rows(local_reference, tmp_path):
    study = spec(tmp_path / "ray", [0], concurrency=2)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=kill_mid_episode, args=(shard_folder(study), killed, stop))
    killer.start()
    try:
        result = run_study_ray(study)
    finally:
        stop.set()
        killer.join()
    assert killed, "no worker was caught mid-episode"
    assert result.done == 2 and not result.crashed and not result.failed
    assert [v.state for v in result.verdicts] == ["verified", "verified"]
    run_ids = [c.run_id() for c in grid(study)]
    assert rows(study.db, run_ids) == rows(local_reference.db, run_ids)
    replayed = [o for o in result.outcomes if o.replayed_calls]
    assert len(replayed) == 1, "exactly the killed run resumed from its journal"
    for run_id in run_ids:
        cassette = study.cassette_dir / f"{run_id}.jsonl.gz"
        assert not journal_path(cassette).exists()
        # the same calls in the same order as the uninterrupted recording: none twice, none lost
        assert calls(cassette) == calls(local_reference.cassette_dir / f"{run_id}.jsonl.gz")


def test_a_resumed_study_replaces_a_crashed_run_in_the_study_store(local_reference, tmp_path):
    """A run left crashed in the study store by an earlier attempt is run again and merged."""
    study = spec(tmp_path / "ray", [1])
    shutil.copytree(local_reference.cassette_dir, study.cassette_dir)
    shutil.copy(local_reference.db, study.db)
    run_ids = [c.run_id() for c in grid(study)]
    with sqlite3.connect(study.db) as conn:
        conn.execute("UPDATE runs SET status = 'crashed' WHERE run_id = ?", [run_ids[0]])
        conn.execute("DELETE FROM turns WHERE run_id = ?", [run_ids[0]])
    result = run_study_ray(study, replay_only=True)
    assert result.done == 1 and result.skipped == 1
    assert [v.state for v in result.verdicts] == ["verified"]
    assert rows(study.db, run_ids) == rows(local_reference.db, run_ids)


def one_error_line(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


@pytest.fixture
def study_yaml(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(spec(tmp_path / "s", [0]).model_dump(mode="json")), encoding="utf-8")
    return str(path)


def test_an_unreachable_address_is_one_line_with_the_fix(study_yaml):
    from tests.backends.server import free_port

    port = free_port()
    line = one_error_line(["study", study_yaml, "--executor", "ray", "--address", f"127.0.0.1:{port}"])
    assert f"--address 127.0.0.1:{port}: no Ray cluster answers there" in line
    assert "fix: on the head node run `ray start --head --port=6379`" in line


@pytest.mark.parametrize("args, words", [
    (["--executor", "ray", "--address", "headnode"], "--address headnode: not HOST:PORT; fix:"),
    (["--executor", "ray", "--address", "ray://10.0.0.1:10001"], "Ray Client addresses (ray://) are not"),
    (["--address", "127.0.0.1:6379"], "--address is for a Ray cluster; fix: add --executor ray"),
    (["--executor", "dask"], "--executor dask: unknown executor; fix: use --executor local or"),
    (["--executor", "ray", "--task-cpus", "0"], "--task-cpus 0.0: must be above 0"),
])
def test_bad_executor_options_are_one_line(study_yaml, args, words):
    assert words in one_error_line(["study", study_yaml, *args])


def test_a_bad_pool_entry_fails_in_the_driver_before_any_task(tmp_path, monkeypatch):
    from tests.backends.test_pool import POOL, study_file, write_pool_entry

    monkeypatch.delenv("VCRIME_OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("VCRIME_MODELS", str(write_pool_entry(tmp_path / "models", [])))
    line = one_error_line(["study", str(study_file(tmp_path, [0])), "--executor", "ray"])
    assert f"model '{POOL}'" in line and "options.base_urls is empty; fix:" in line
    assert not (tmp_path / "study.shards").exists()
