"""Studies: a grid of attackers x tasks x seeds, run with several episodes in flight.

Finished runs are skipped; a half-done run is re-played from its cassette (mode ``new``: its
recorded turns replay, the rest is recorded live), so an interrupted study resumes to exactly
the rows an uninterrupted one would have.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .backends.base import ModelBackend
from .backends.registry import make_backend
from .cassette import Cassette, RecordMode
from .cassette.persist import cassette_exists, journal_path
from .collector import collector_off_while_runs_play
from .defaults import DEFAULT_CASSETTES, RUNS
from .engine import TurnRecord
from .harm import prepare_default_lexicon
from .ids import MAX_SEED, IdError, check_id
from .memo import runs_in_flight
from .models import get_model
from .runner import EpisodeInputs, RunConfig, RunOutcome, cassette_path, check_records_run, run_episode
from .scenario import ScenarioError, list_task_ids
from .scrub import scrub_text
from .slices import take_turn
from .statuses import RUN_OUTCOMES
from .store import Store

FINISHED = RUN_OUTCOMES
"""Runs a resumed study skips: every outcome, model errors included; crashed runs run again."""


class StudyConfig(BaseModel):
    """A study file (YAML). Roles name models in local_models/."""

    model_config = ConfigDict(extra="forbid")
    name: str
    attackers: list[str] = Field(min_length=1)
    judge: str
    world_manager: str
    backend: str = "local"
    tasks: list[str] | Literal["all"] = "all"
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default_factory=lambda: [0, 1, 2], min_length=1)
    max_turns: int = Field(60, ge=1)
    stall_turns: int = Field(30, ge=1)
    concurrency: int = Field(4, ge=1, le=1024)
    db: Path = RUNS / "study.sqlite"
    cassette_dir: Path = DEFAULT_CASSETTES

    @field_validator("judge", "world_manager", "backend")
    @classmethod
    def _one_id(cls, value: str) -> str:
        return check_id(value)

    @field_validator("attackers", "tasks")
    @classmethod
    def _ids(cls, value: list[str] | str) -> list[str] | str:
        return value if value == "all" else [check_id(v) for v in value]


def load_study(path: Path) -> StudyConfig:
    from .yamlio import describe, load_yaml

    try:
        data = load_yaml(path)
        return StudyConfig.model_validate(data)
    except OSError as exc:
        raise ScenarioError(path, "", f"cannot read study file: {exc.strerror or exc}",
                            "check the path of the study file") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(path, "", describe(exc)) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        field_path = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(path, field_path, first["msg"],
                            "see StudyConfig in vcrime_audit/study.py") from None


def is_job_failure(exc: Exception) -> bool:
    """Failures that end one run and are recorded as its crash (the rest of the study goes on)."""
    from .backends.base import BackendError
    from .cassette import CassetteError, CassetteMiss
    from .store.db import StoreError

    return isinstance(exc, (BackendError, CassetteError, CassetteMiss, StoreError))


def finish_cassette(config: RunConfig, cassette_dir: Path) -> bool:
    """Compress the cassette of a run that finished but was killed before its compression. The
    journal at the run's place must record that run: another's would be compressed under its name."""
    path = cassette_path(config, cassette_dir)
    if not journal_path(path).exists():
        return False
    cassette = Cassette(path, RecordMode.none)
    if not cassette.pending_finalise:
        return False
    check_records_run(cassette, config)
    cassette.finalise()
    return True


def parse_shard(text: str | None) -> tuple[int, int]:
    """``"2/3"`` -> (2, 3): the second of three shards (1-based)."""
    if not text:
        return 1, 1
    parts = text.split("/")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise IdError(f"--shard: '{text}' is not i/n; fix: give two whole numbers, e.g. --shard 2/4")
    index, total = (int(p) for p in parts)
    if not 1 <= index <= total:
        raise IdError(f"--shard {text}: shard {index} of {total} does not exist; fix: use "
                      f"1 <= i <= n, e.g. --shard 1/{max(total, 1)}")
    return index, total


def grid(study: StudyConfig, shard: tuple[int, int] = (1, 1)) -> list[RunConfig]:
    tasks = list_task_ids() if study.tasks == "all" else list(study.tasks)
    runs = [RunConfig(task=t, seed=s, attacker=a, judge=study.judge, world_manager=study.world_manager,
                      backend=study.backend, max_turns=study.max_turns, stall_turns=study.stall_turns)
            for a in study.attackers for t in tasks for s in study.seeds]
    runs = list(dict.fromkeys(runs))
    index, total = shard
    return [r for i, r in enumerate(runs) if i % total == index - 1]


@dataclass
class StudyProgress:
    total: int
    skipped: int = 0
    done: int = 0
    finalised: int = 0
    turns: int = 0
    outcomes: list[RunOutcome] = field(default_factory=list)
    crashed: list[tuple[str, str]] = field(default_factory=list)
    """(run id, reason) of runs that crashed: a backend failure, a replay miss, a bug."""

    @property
    def not_verified(self) -> list[RunOutcome]:
        """Replayed runs whose rows differ from their recording or cannot be checked."""
        return [o for o in self.outcomes if not o.check.ok]


def unfinished(runs: list[RunConfig], store: Store, cassette_dir: Path,
               progress: StudyProgress) -> list[RunConfig]:
    """The runs not finished in ``store``; finished ones count as skipped (and a finished run's
    cassette whose compression was interrupted is finalised)."""
    pending = []
    for config in runs:
        row = store.run(config.run_id())
        if row is not None and row["status"] in FINISHED:
            progress.skipped += 1
            if finish_cassette(config, cassette_dir):
                progress.finalised += 1
        else:
            pending.append(config)
    return pending


async def run_study(study: StudyConfig, shard: tuple[int, int] = (1, 1),
                    backend: ModelBackend | None = None, replay_only: bool = False,
                    on_turn: Callable[[str, TurnRecord], None] | None = None,
                    on_run: Callable[[RunOutcome], None] | None = None) -> StudyProgress:
    runs = grid(study, shard)
    store = Store(study.db)
    progress = StudyProgress(total=len(runs))
    try:
        pending = unfinished(runs, store, study.cassette_dir, progress)
    except BaseException as exc:
        store.__exit__(type(exc), exc, exc.__traceback__)
        raise
    return await play_runs(study, pending, store, progress, backend, replay_only, on_turn, on_run)


def in_order(total: int) -> Callable[[], int | None]:
    """0, 1, ..., total - 1, then None: the runs of one process, taken in grid order."""
    taken = iter(range(total))
    return lambda: next(taken, None)


async def play_runs(study: StudyConfig, pending: list[RunConfig], store: Store, progress: StudyProgress,
                    backend: ModelBackend | None = None, replay_only: bool = False,
                    on_turn: Callable[[str, TurnRecord], None] | None = None,
                    on_run: Callable[[RunOutcome], None] | None = None,
                    take: Callable[[], int | None] | None = None) -> StudyProgress:
    """Play ``pending`` with ``study.concurrency`` runs in flight, and close ``store``.

    ``take`` hands out the index of the next run to play (None: no more); by default every run
    in order. Processes that share one grid share one ``take`` (:mod:`vcrime_audit.study_processes`),
    so each run is played once, by whichever process has a free slot first. What SQLite raises
    (a damaged store) stops the study as one line naming the store (``Store.__exit__``)."""
    with store:
        return await _play_runs(study, pending, store, progress, backend, replay_only, on_turn, on_run,
                                take or in_order(len(pending)))


async def _play_runs(study: StudyConfig, pending: list[RunConfig], store: Store, progress: StudyProgress,
                     backend: ModelBackend | None, replay_only: bool,
                     on_turn: Callable[[str, TurnRecord], None] | None,
                     on_run: Callable[[RunOutcome], None] | None, take: Callable[[], int | None]
                     ) -> StudyProgress:
    inputs = EpisodeInputs()
    store.fold_jobs_behind()
    prepare_default_lexicon()
    if not replay_only:  # a task's first read (its YAML) takes 10-40 ms: not with calls in flight
        for task in sorted({c.task for c in pending}):
            inputs.world(task)
    owned = bool(pending) and backend is None and not replay_only
    if owned:
        names = sorted({n for c in pending for n in (c.attacker, c.judge, c.world_manager)})
        entries = {n: get_model(n) for n in names}
        if study.backend != "openai" and not all(
                cassette_exists(cassette_path(c, study.cassette_dir)) for c in pending):
            for entry in entries.values():  # before any run: one line naming the missing weights
                entry.weights_path()
        backend = make_backend(study.backend, entries)
    start_gate = asyncio.Lock()
    """A run's start (reading its task and cassette, claiming it in the store) runs on the event
    loop until its first model call; 256 runs starting in one pass would hold the loop for
    seconds while the calls in flight wait."""

    def observe(run_id: str, record: TurnRecord) -> None:
        progress.turns += 1
        if on_turn:
            on_turn(run_id, record)

    async def one(config: RunConfig, calls_done: Callable[[], None]) -> None:
        try:
            async with start_gate:  # one run starts per pass of the event loop: ~3 ms each
                await asyncio.sleep(0)
            await take_turn()  # and in line with the answers waiting for their slice
            resume = cassette_exists(cassette_path(config, study.cassette_dir))
            mode = RecordMode.none if replay_only else RecordMode.new if resume else RecordMode.once
            try:
                outcome = await run_episode(config, study.db, study.cassette_dir, mode, store=store,
                                            backend=backend, observer=observe, on_calls_done=calls_done,
                                            inputs=inputs)
            except Exception as exc:  # one run's crash must not stop the others
                if not is_job_failure(exc):
                    raise
                progress.crashed.append((config.run_id(), scrub_text(f"{type(exc).__name__}: {exc}")))
                return
        finally:
            calls_done()
        progress.done += 1
        progress.outcomes.append(outcome)
        if on_run:
            on_run(outcome)

    runs: list[asyncio.Task[None]] = []

    async def lane() -> None:
        """One of ``concurrency`` slots for model calls: plays the runs it takes, one after the
        other; the next starts once the last made its last call (the last one's rows are hashed
        and its cassette closed meanwhile)."""
        while (index := take()) is not None:
            free = asyncio.Event()
            run = asyncio.ensure_future(one(pending[index], free.set))
            runs.append(run)
            await free.wait()
            if run.done():
                await run  # a failure that is not the run's own (a bug) stops the study

    lanes = min(study.concurrency, len(pending))
    try:
        with collector_off_while_runs_play(), runs_in_flight(lanes):
            await asyncio.gather(*(lane() for _ in range(lanes)))
            await asyncio.gather(*runs)
    finally:
        for run in runs:  # interrupted, or a bug: the runs still going are marked crashed first
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        if owned and backend is not None:
            await backend.aclose()
    return progress
