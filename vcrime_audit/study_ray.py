"""Studies on a Ray cluster (``study --executor ray``): one Ray task per episode.

Each task records its episode's cassette into the study's cassette folder and its rows into a
shard store of its own (``<db stem>.shards/<run id>.sqlite`` beside the study store). A task whose
worker process or node dies is retried by Ray (``max_retries``); the retry reopens the same
cassette in mode ``new`` (its journal's turns replay, the rest is recorded) and the same shard
store, whose ``running`` claim it takes over. The driver merges the shard stores into the study
store with :func:`vcrime_audit.merge.merge_stores` and verifies every run it merged.

On a multi-node cluster the study store's folder and the cassette folder must be one shared file
system, mounted at the same path on every node (the tasks write there).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cassette import RecordMode
from .cassette.persist import cassette_exists
from .runner import RunConfig, RunOutcome, cassette_path, run_episode
from .scrub import scrub_text
from .statuses import RUNNING
from .store import Store
from .study import StudyConfig, StudyProgress, grid, is_job_failure, unfinished

RAY_VERSION = "2.60.0"
INSTALL_FIX = f"pip install 'vcrime-audit[ray]' (Ray {RAY_VERSION})"
MAX_RETRIES = 3
"""How often Ray re-runs a task whose worker or node died (an episode's own crash is not retried)."""
PASSED_ENV = ("VCRIME_MODELS", "VCRIME_OPENAI_BASE_URL")


class ClusterError(ValueError):
    """Ray is missing, or no cluster answers at the address given (the message carries the fix)."""


@dataclass
class TaskResult:
    """What one Ray task sends back: the outcome, or the crash reason; and the worker it ran in."""

    run_id: str
    outcome: RunOutcome | None
    crashed: str
    worker: str


@dataclass
class RayStudy(StudyProgress):
    """A study's progress plus the verdicts of the runs the driver merged and verified."""

    verdicts: list[Any] | None = None
    failed: list[tuple[str, str]] | None = None
    """(run id, reason) of tasks Ray gave up on (worker died more than MAX_RETRIES times, a bug)."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError(f"--executor ray: Ray is not installed; fix: {INSTALL_FIX}, or use "
                           "--executor local") from None
    return ray


def check_address(address: str) -> None:
    """A ``HOST:PORT`` Ray address must accept a connection before Ray is asked to join it."""
    if address == "auto":
        return
    fix = ("fix: on the head node run `ray start --head --port=6379` and pass its "
           "HOST:PORT (e.g. --address 10.0.0.1:6379), or omit --address to start Ray on this machine")
    if address.startswith("ray://"):
        raise ClusterError(f"--address {address}: Ray Client addresses (ray://) are not supported; "
                           f"give the head's GCS address HOST:PORT instead; {fix}")
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(f"--address {address}: not HOST:PORT; {fix}")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=3):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ClusterError(f"--address {address}: no Ray cluster answers there ({reason}); "
                           f"{fix}") from None


def connect(address: str | None) -> Any:
    """Join the cluster at ``address`` (``auto``: the one this machine runs), start one on this
    machine when none is given, or use the Ray already initialised in this process."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    try:
        ray.init(address=address, include_dashboard=False, runtime_env={"env_vars": env},
                 logging_level="WARNING")
    except ConnectionError as exc:
        raise ClusterError(f"--address {address}: cannot join the Ray cluster "
                           f"({str(exc).splitlines()[0][:200]}); fix: start it with "
                           "`ray start --head` or pass its HOST:PORT") from None
    return ray


def shard_folder(study: StudyConfig) -> Path:
    return study.db.parent / f"{study.db.stem}.shards"


def take_over(db: Path, run_id: str) -> None:
    """Release the claim a dead attempt left on its run: only the driver schedules this run's
    shard store, and Ray retries a task only after its previous worker died."""
    if not db.exists():
        return
    with Store(db) as store, store.db.conn:
        store.db.conn.execute("UPDATE runs SET writer = NULL WHERE run_id = ? AND status = ?",
                              [run_id, RUNNING])


def play_one(config: RunConfig, db: Path, cassette_dir: Path, replay_only: bool) -> TaskResult:
    """One Ray task: play (or resume) one episode into its own shard store."""
    from .recorder import this_writer

    run_id = config.run_id()
    take_over(db, run_id)
    resume = cassette_exists(cassette_path(config, cassette_dir))
    mode = RecordMode.none if replay_only else RecordMode.new if resume else RecordMode.once
    try:
        outcome = asyncio.run(run_episode(config, db, cassette_dir, mode))
    except Exception as exc:
        if not is_job_failure(exc):
            raise
        return TaskResult(run_id, None, scrub_text(f"{type(exc).__name__}: {exc}"), this_writer())
    return TaskResult(run_id, outcome, "", this_writer())


class DriverLock:
    """One driver per study store: a lock file in the shard folder held while the study runs."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "driver.lock"
        self.file = open(self.path, "a+")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.close()
            raise ClusterError(f"{self.path}: another study driver is running on this store; fix: "
                               "wait for it, or give this study another db") from None

    def release(self) -> None:
        """Unlock, and remove the shard folder when nothing but the lock is left in it."""
        self.path.unlink(missing_ok=True)
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()
        try:
            self.path.parent.rmdir()
        except OSError:
            pass


def pending_runs(study: StudyConfig, shard: tuple[int, int], progress: StudyProgress) -> list[RunConfig]:
    """The grid's runs that are not finished in the study store (finished ones are skipped)."""
    runs = grid(study, shard)
    if not study.db.exists():
        return runs
    with Store(study.db) as store:
        return unfinished(runs, store, study.cassette_dir, progress)


def preflight(study: StudyConfig, pending: list[RunConfig]) -> None:
    """Check an openai backend's entries here, once (addresses, pools reporting one model), so a
    bad entry is one error line instead of a crash in every task."""
    if study.backend != "openai":
        return
    from .backends.registry import make_backend
    from .models import get_model

    names = {n for c in pending for n in (c.attacker, c.judge, c.world_manager)}
    backend = make_backend(study.backend, {n: get_model(n) for n in names})
    asyncio.run(backend.aclose())


def run_study_ray(study: StudyConfig, shard: tuple[int, int] = (1, 1), replay_only: bool = False,
                  address: str | None = None, task_cpus: float = 1.0) -> RayStudy:
    """Run the study's pending episodes as Ray tasks (at most ``study.concurrency`` at once),
    then merge the shard stores into ``study.db`` and verify every merged run."""
    from .merge import merge_stores
    from .progress import progress
    from .verify import Verifier

    import_ray()
    if address is not None:
        check_address(address)
    study = study.model_copy(update={"db": study.db.resolve(),
                                     "cassette_dir": study.cassette_dir.resolve()})
    result = RayStudy(total=len(grid(study, shard)), verdicts=[], failed=[])
    folder = shard_folder(study)
    lock = DriverLock(folder)
    try:
        pending = pending_runs(study, shard, result)
        if pending and not replay_only:
            preflight(study, pending)
        if pending:
            ray = connect(address)
            study.cassette_dir.mkdir(parents=True, exist_ok=True)
            task = ray.remote(max_retries=MAX_RETRIES, num_cpus=task_cpus)(play_one)
            _schedule(ray, task, study, pending, replay_only, folder, result, progress)
        gave_up = {r for r, _ in result.failed or []}
        merged = {c.run_id() for c in pending} - gave_up
        shards = sorted(p for p in (folder / f"{r}.sqlite" for r in merged) if p.exists())
        if shards:
            merge_stores(study.db, shards)  # a shard's copy replaces an unfinished one
            verifier = Verifier([study.cassette_dir])
            try:
                verifier.store(study.db, only=merged)
            finally:
                verifier.close()
            result.verdicts = verifier.verdicts
            if all(v.ok or v.state == "crashed" for v in verifier.verdicts):
                for path in shards:
                    for extra in ("", "-wal", "-shm"):
                        Path(f"{path}{extra}").unlink(missing_ok=True)
    finally:
        lock.release()
    return result


def _schedule(ray: Any, task: Any, study: StudyConfig, pending: list[RunConfig], replay_only: bool,
              folder: Path, result: RayStudy, progress: Any) -> None:
    queue = list(pending)
    in_flight: dict[Any, RunConfig] = {}
    with progress(f"{study.name} runs on Ray", len(pending)) as tick:
        while queue or in_flight:
            while queue and len(in_flight) < study.concurrency:
                config = queue.pop(0)
                ref = task.remote(config, folder / f"{config.run_id()}.sqlite", study.cassette_dir,
                                  replay_only)
                in_flight[ref] = config
            [ready], _ = ray.wait(list(in_flight), num_returns=1)
            config = in_flight.pop(ready)
            try:
                answer: TaskResult = ray.get(ready)
            except Exception as exc:  # the worker died MAX_RETRIES + 1 times, or a bug in the task
                first = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
                result.failed.append((config.run_id(), scrub_text(f"{type(exc).__name__}: {first}")[:300]))
            else:
                if answer.outcome is None:
                    result.crashed.append((answer.run_id, answer.crashed))
                else:
                    result.done += 1
                    result.turns += answer.outcome.turns
                    result.outcomes.append(answer.outcome)
            tick(f"{result.done} done, {len(in_flight)} in flight, "
                 f"{len(result.crashed) + len(result.failed)} failed")
