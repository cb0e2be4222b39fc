"""Run, record and replay episodes: ties scenario, backend, cassette, engine and store together."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import __version__
from .backends.base import ModelBackend
from .backends.registry import make_backend
from .canonical import content_hash, rows_content_hash
from .cassette import Cassette, CassetteError, RecordMode
from .cassette.errors import check_recorded_job
from .collector import collector_off_while_runs_play
from .defaults import DEFAULT_CASSETTES, DEFAULT_DB, DEFAULT_TASK
from .engine import Engine, EpisodeLimits, Roles, TurnRecord
from .fingerprints import weights_digest
from .identity import CheckedOutcome, ReplayCheck
from .ids import MAX_RUN_ID, check_id, inside, shown_path
from .models import DEFAULT_MODEL, ModelEntry, get_model
from .recorder import RUN, Recorder, TurnCommits, now
from .rowdigest import row_digest
from .scenario import initial_world, load_task
from .statuses import MAX_TURNS
from .store import Store
from .store.db import trajectory_rows
from .store.rows import turn_rows
from .world import WorldState


def validate_id(value: str, field_name: str) -> str:
    """Ids become file names: letters, digits, ``_ . -``, at most 128 characters, no ``..``."""
    import re

    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}", value) \
            or ".." in value:
        raise ValueError(f"{field_name} {str(value)[:80]!r} is not a valid id (letters, digits, "
                         "'_', '.', '-'; at most 128 characters)")
    return value


@dataclass(frozen=True)
class RunConfig:
    task: str = DEFAULT_TASK
    seed: int = 0
    attacker: str = DEFAULT_MODEL
    judge: str = DEFAULT_MODEL
    world_manager: str = DEFAULT_MODEL
    backend: str = "local"
    max_turns: int = 60
    stall_turns: int = 30

    def __post_init__(self) -> None:
        problems = [
            (not 0 <= self.seed < 2**63, f"--seed must lie in [0, 2**63), got {self.seed}"),
            (self.max_turns < 1, f"--max-turns must be at least 1, got {self.max_turns}"),
            (self.stall_turns < 1, f"--stall-turns must be at least 1, got {self.stall_turns}"),
        ]
        for bad, message in problems:
            if bad:
                raise ValueError(message)

    def run_id(self) -> str:
        identity = {k: v for k, v in self.__dict__.items() if k not in ("task", "seed")}
        return f"{self.task}-s{self.seed}-{content_hash(identity, 4)}"


@dataclass
class RunOutcome(CheckedOutcome):
    run_id: str
    status: str
    reason: str
    turns: int
    store: Path
    cassette: Path
    turn_rows_hash: str
    model_calls: int
    replayed_calls: int
    check: ReplayCheck
    extra: dict[str, Any] = field(default_factory=dict)


TurnObserver = Callable[[str, TurnRecord], None]


async def _play(config: RunConfig, world: WorldState, roles: Roles, cassette: Cassette,
                inner: ModelBackend | None, store: Store, owns_inner: bool = True,
                observer: TurnObserver | None = None,
                on_calls_done: Callable[[], None] | None = None) -> RunOutcome:
    """One episode, live or replayed, with the cycle collector off
    (:func:`collector.collector_off_while_runs_play`): its objects form no cycles."""
    with collector_off_while_runs_play():
        return await _episode(config, world, roles, cassette, inner, store, owns_inner, observer,
                              on_calls_done)


async def _episode(config: RunConfig, world: WorldState, roles: Roles, cassette: Cassette,
                   inner: ModelBackend | None, store: Store, owns_inner: bool,
                   observer: TurnObserver | None,
                   on_calls_done: Callable[[], None] | None = None) -> RunOutcome:
    run_id = config.run_id()
    recorder = Recorder(RUN, run_id, cassette, store, inner, owns_inner=owns_inner)
    engine = Engine(recorder.backend, roles, EpisodeLimits(config.max_turns, config.stall_turns))
    if hasattr(observer, "bind"):  # progress.TurnLines reads the backend's call counters
        observer.bind(recorder.backend)
    models = [{"name": r.name, "family": r.family, "vendor": r.vendor, "source": "registry",
               "fingerprint": weights_digest(recorder.backend, r.name)}
              for r in {roles.attacker.name: roles.attacker, roles.judge.name: roles.judge,
                        roles.world_manager.name: roles.world_manager}.values()]
    await recorder.start_off_loop({
        "run_id": run_id, "task_id": world.task_id, "map_id": world.map_id, "goal_id": world.goal_id,
        "seed": config.seed, "attacker": config.attacker, "judge": config.judge,
        "world_manager": config.world_manager, "backend": config.backend,
        "reason": "", "turns": 0, "max_turns": config.max_turns, "stall_turns": config.stall_turns,
        "cassette": shown_path(cassette.path), "initial_world_hash": world.digest(), "final_world_hash": None,
        "turn_rows_hash": None, "synthetic": 0, "vcrime_version": __version__,
        "started_at": now(), "finished_at": None},
        clear=lambda s: s.clear_run(run_id),
        also=lambda s: s.insert_rows("models", models, replace=True))

    commits = TurnCommits(recorder)
    on_turn = partial(_on_turn, commits, run_id, roles.judge.name, cassette.recording, observer)
    try:
        last = await engine.run(world, config.seed, on_turn)
        if not cassette.recording:
            cassette.check_unread()
        if on_calls_done is not None:
            on_calls_done()
        await commits.wait()
    except BaseException as exc:
        try:
            await commits.settle()
        finally:
            recorder.crash(exc)
        raise
    finally:
        await recorder.aclose()
    final = last.world_after if last and last.world_after else world
    digest, rows_digest = (await store.read_off_loop(lambda s: _row_hashes(s, run_id))
                           if cassette.recording else _row_hashes(store, run_id, cassette))
    status, reason = (last.status, last.reason) if last else (MAX_TURNS, "no turn played")
    turns = last.turn if last else 0
    check = await recorder.finish_off_loop(
        {"status": status, "reason": reason, "turns": turns, "final_world_hash": final.digest(),
         "turn_rows_hash": digest},
        {"run_id": run_id, "status": status, "turns": turns, "turn_rows_hash": digest,
         "rows": rows_digest}, "turn_rows_hash")
    return RunOutcome(run_id, status, reason, turns, store.path, cassette.path, digest,
                      recorder.backend.model_calls, recorder.backend.replayed, check)


async def _on_turn(commits: TurnCommits, run_id: str, judge_model: str, recording: bool,
                   observer: TurnObserver | None, record: TurnRecord) -> None:
    """What :func:`_episode` does with each turn the engine plays. Not a function defined in
    ``_episode``: compiled (:mod:`vcrime_audit.native`), a coroutine keeps all its locals in one
    object that its inner functions hold, so one kept among those locals would make a reference
    cycle of each run's objects, which the cycle collector, off while runs play, never frees."""
    await commits.add(_turn_write(run_id, record, judge_model, recording),
                      None if observer is None else lambda: observer(run_id, record))


def _turn_write(run_id: str, record: TurnRecord, judge_model: str, recording: bool
                ) -> Callable[[Store], None]:
    """How a turn's rows reach the store. A recording makes them on the store's writer thread,
    off the event loop that sends the calls. A replay makes them at once, before the transaction
    that inserts them (:class:`recorder.TurnCommits` commits 16 turns to one): the write lock is
    then held only for the inserts, not for making 15 turns' rows, and processes replaying into
    one store (``study --replay --processes``) wait less for each other."""
    if recording:
        return lambda s: s.write_turn(run_id, record, judge_model)
    rows = turn_rows(run_id, record, judge_model)
    return lambda s: s.insert_turn_rows(run_id, record.turn, rows)


def _row_hashes(store: Store, run_id: str, replayed: Cassette | None = None
                ) -> tuple[str, dict[str, Any]]:
    """The run's rows read back and hashed (its ``turn_rows_hash`` and row digest): ~10 ms for a
    30-turn run, which a recording job does on the store's writer thread, so the event loop
    keeps serving the other runs when many end at once. ``replayed``: the cassette a replay
    plays (:func:`recorded_digest`)."""
    rows = trajectory_rows(store, run_id)
    digest = rows_content_hash(rows)
    kept = recorded_digest(replayed, digest)
    return digest, kept if kept is not None else row_digest(rows)


def recorded_digest(replayed: Cassette | None, digest: str) -> dict[str, Any] | None:
    """The row digest a format-2 cassette's summary recorded with ``digest`` as its
    ``turn_rows_hash``: the digest of the very rows hashed (rows that hash alike are the same
    rows), which a replay therefore need not make again. A digest is only read to say where rows
    differ from the recording's (``ReplayCheck.where``), and its definition may change between
    versions: a replay whose rows differ, a recording and an upgrade of a format-1 cassette make
    their own."""
    if replayed is None or replayed.recording or replayed.format < 2 or replayed.summary is None:
        return None
    recorded = replayed.summary
    kept = recorded.get("rows")
    return kept if recorded.get("turn_rows_hash") == digest and isinstance(kept, dict) else None


def _roles(config: RunConfig, entries: dict[str, ModelEntry]) -> Roles:
    return Roles(entries[config.attacker], entries[config.judge], entries[config.world_manager])


def cassette_path(config: RunConfig, cassette_dir: Path) -> Path:
    return inside(cassette_dir, f"{check_id(config.run_id(), 'run id', MAX_RUN_ID)}.jsonl.gz")


class EpisodeInputs:
    """What a new run's start reads from files, read once for many runs: each task's initial
    world (with its recorded form) and each model's entry (with its scrubbed recorded form).

    A study passes one to all its runs: a run's start took 7-14 ms on the event loop (py-spy,
    320 one-turn runs), most of it reading and checking the task's YAML again, hashing its fresh
    initial world and scrubbing the model entries, while the calls of the runs in flight waited.
    Runs of a task share its initial world: worlds are copy-on-write (a patch copies what it
    changes, :class:`patch.Draft`), as turns of one run share them. A lone run makes its own."""

    def __init__(self) -> None:
        self._worlds: dict[str, tuple[WorldState, dict[str, Any]]] = {}
        self._entries: dict[tuple[str, str], tuple[ModelEntry, dict[str, Any]]] = {}

    def world(self, task: str) -> tuple[WorldState, dict[str, Any]]:
        """The task's initial world and its JSON form; do not modify either."""
        made = self._worlds.get(task)
        if made is None:
            world = initial_world(load_task(task))
            made = self._worlds[task] = (world, world.model_dump(mode="json"))
        return made

    def entry(self, name: str, backend: str) -> tuple[ModelEntry, dict[str, Any]]:
        """The model's entry for ``backend`` and the form a cassette header records."""
        made = self._entries.get((name, backend))
        if made is None:
            entry = get_model(name).for_engine(backend)
            made = self._entries[(name, backend)] = (entry, entry.recorded())
        return made


async def run_episode(config: RunConfig, db: Path = DEFAULT_DB, cassette_dir: Path = DEFAULT_CASSETTES,
                      mode: RecordMode = RecordMode.once, *, store: Store | None = None,
                      backend: ModelBackend | None = None,
                      observer: TurnObserver | None = None,
                      cassette_file: Path | None = None,
                      on_calls_done: Callable[[], None] | None = None,
                      inputs: EpisodeInputs | None = None) -> RunOutcome:
    """Play one episode; model calls go through the run's cassette (``<run_id>.jsonl.gz``).

    An existing cassette supplies the initial world and model entries it was recorded with, so
    a half-done run re-played in mode ``new`` replays its recorded turns and goes on live.
    ``backend`` may be shared between episodes (it is not closed here). ``cassette_file``
    overrides the cassette's place (default ``<cassette_dir>/<run_id>.jsonl.gz``).
    ``on_calls_done`` is called once the episode has made its last model call, before its rows
    are hashed and its cassette is closed (a study starts its next episode then). ``inputs``:
    the tasks and models read for earlier runs (:class:`EpisodeInputs`).
    """
    cassette = Cassette(cassette_file or cassette_path(config, cassette_dir), mode,
                        unread_requests=True)
    if cassette.meta:
        recorded, world, entries = _from_meta(cassette)
        _check_records(cassette, recorded, config)
    else:
        inputs = inputs or EpisodeInputs()
        world, recorded_world = inputs.world(config.task)
        made = {name: inputs.entry(name, config.backend)
                for name in sorted({config.attacker, config.judge, config.world_manager})}
        entries = {name: entry for name, (entry, _) in made.items()}
        cassette.meta = {"config": config.__dict__, "initial_world": recorded_world,
                         "models": {name: recorded for name, (_, recorded) in made.items()},
                         "vcrime_version": __version__, "fingerprints": {}}
    inner = None
    if cassette.recording:
        inner = backend if backend is not None else make_backend(config.backend, entries)
    with nullcontext(store) if store is not None else Store(db) as into:
        return await _play(config, world, _roles(config, entries), cassette, inner, into,
                           owns_inner=backend is None, observer=observer, on_calls_done=on_calls_done)


def check_records_run(cassette: Cassette, config: RunConfig) -> None:
    """Raise unless ``cassette`` (a sandbox run's) records the run ``config`` (``AnotherJobsCassette``,
    naming the first field of its header's config that differs)."""
    _check_records(cassette, _from_meta(cassette)[0], config)


def _check_records(cassette: Cassette, recorded: RunConfig, config: RunConfig) -> None:
    check_recorded_job(cassette.path, "run", recorded.run_id(), config.run_id(), recorded.__dict__,
                       config.__dict__)


def _from_meta(cassette: Cassette) -> tuple[RunConfig, WorldState, dict[str, ModelEntry]]:
    """The config, initial world and model entries a run cassette's header holds, checked."""
    meta = cassette.meta
    missing = [k for k in ("config", "initial_world", "models") if k not in meta]
    if missing:
        followup = meta.get("followup")
        hint = ("it is a certification cassette: use vcrime-audit certify --replay"
                if meta.get("kind") == "certification" else
                f"it is a follow-up ({followup}) cassette: use vcrime-audit {followup} --replay"
                if meta.get("kind") == "followup" else "re-record the cassette")
        raise CassetteError(f"{cassette.path}: not a sandbox-run cassette (header.meta lacks "
                            f"{', '.join(missing)}); fix: {hint}")
    fix = "fix: re-record the cassette or restore it from git"
    known = set(RunConfig.__dataclass_fields__)
    raw = meta["config"]
    if not isinstance(raw, dict) or set(raw) - known:
        raise CassetteError(f"{cassette.path}: header.meta.config is not a run config; {fix}")
    try:
        config = RunConfig(**raw)
        validate_id(config.task, "header.meta.config.task")
        world = WorldState.model_validate(meta["initial_world"])
        if not isinstance(meta["models"], dict):
            raise ValueError("header.meta.models must be an object")
        entries = {n: ModelEntry.model_validate(e) for n, e in meta["models"].items()}
    except (TypeError, ValueError) as exc:
        raise CassetteError(f"{cassette.path}: {str(exc).splitlines()[0]}; {fix}") from None
    if world.task_id != config.task:
        raise CassetteError(f"{cassette.path}: header.meta.initial_world.task_id {world.task_id!r} is "
                            f"not header.meta.config.task {config.task!r}; {fix}")
    for role in ("attacker", "judge", "world_manager"):
        if getattr(config, role) not in entries:
            raise CassetteError(f"{cassette.path}: header.meta.config.{role} "
                                f"{getattr(config, role)!r} has no entry in header.meta.models; {fix}")
    return config, world, entries


async def replay(cassette_path: Path, db: Path | None = None) -> RunOutcome:
    """Re-run a recorded episode from its cassette alone: no model, no scenario files."""
    with collector_off_while_runs_play():  # reading the cassette makes many objects too
        return await _replay(cassette_path, db)


async def _replay(cassette_path: Path, db: Path | None) -> RunOutcome:
    """:func:`replay`, whose cassette and world are freed when this returns: before the
    collector is on again, so that its first pass does not walk them."""
    cassette = Cassette(cassette_path, RecordMode.none, unread_requests=True)
    config, world, entries = _from_meta(cassette)
    run_id = check_id(config.run_id(), f"{cassette_path}: header.meta.config.task (the run id)",
                      MAX_RUN_ID)
    with Store(db or inside(Path("runs"), f"replay-{run_id}.sqlite")) as store:
        return await _play(config, world, _roles(config, entries), cassette, None, store)


async def replay_loaded(cassette: Cassette, store: Store, found_for: str | None = None) -> RunOutcome:
    """:func:`replay` of a cassette already read (mode ``none``) into an open store. ``found_for``:
    the run id it was found for (``verify``: a store's row), which another run's cassette is not."""
    config, world, entries = _from_meta(cassette)
    if found_for is not None:
        check_recorded_job(cassette.path, "run", config.run_id(), found_for)
    return await _play(config, world, _roles(config, entries), cassette, None, store)
