"""Run, record and replay episodes: ties scenario, backend, cassette, engine and store together."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__
from .backends.base import ModelBackend
from .backends.registry import make_backend
from .canonical import content_hash
from .cassette import Cassette, CassetteError, RecordingBackend, RecordMode
from .defaults import DEFAULT_CASSETTES, DEFAULT_DB, DEFAULT_TASK
from .engine import Engine, EpisodeLimits, Roles, TurnRecord
from .models import DEFAULT_MODEL, ModelEntry, get_model
from .scenario import initial_world, load_task
from .store import Store, turn_rows_hash
from .world import WorldState


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

    def run_id(self) -> str:
        identity = {k: v for k, v in self.__dict__.items() if k not in ("task", "seed")}
        return f"{self.task}-s{self.seed}-{content_hash(identity, 4)}"


@dataclass
class RunOutcome:
    run_id: str
    status: str
    reason: str
    turns: int
    store: Path
    cassette: Path
    turn_rows_hash: str
    model_calls: int
    replayed_calls: int
    recorded_hash: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def identical(self) -> bool | None:
        return None if self.recorded_hash is None else self.recorded_hash == self.turn_rows_hash


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


TurnObserver = Callable[[str, TurnRecord], None]


async def _play(config: RunConfig, world: WorldState, roles: Roles, cassette: Cassette,
                inner: ModelBackend | None, store: Store, owns_inner: bool = True,
                observer: TurnObserver | None = None) -> RunOutcome:
    run_id = config.run_id()
    backend = RecordingBackend(cassette, inner if owns_inner or inner is None else _Borrowed(inner))
    engine = Engine(backend, roles, EpisodeLimits(config.max_turns, config.stall_turns))
    if hasattr(observer, "bind"):  # progress.TurnLines reads the backend's call counters
        observer.bind(backend)
    store.delete_run(run_id)
    store.start_run({
        "run_id": run_id, "task_id": world.task_id, "map_id": world.map_id, "goal_id": world.goal_id,
        "seed": config.seed, "attacker": config.attacker, "judge": config.judge,
        "world_manager": config.world_manager, "backend": config.backend, "status": "running",
        "reason": "", "turns": 0, "max_turns": config.max_turns, "stall_turns": config.stall_turns,
        "cassette": str(cassette.path), "initial_world_hash": world.digest(), "final_world_hash": None,
        "turn_rows_hash": None, "synthetic": 0, "vcrime_version": __version__,
        "started_at": _now(), "finished_at": None},
        [{"name": r.name, "family": r.family, "vendor": r.vendor, "source": "registry"}
         for r in {roles.attacker.name: roles.attacker, roles.judge.name: roles.judge,
                   roles.world_manager.name: roles.world_manager}.values()])

    async def on_turn(record: TurnRecord) -> None:
        store.commit_turn(run_id, record, roles.judge.name)
        if cassette.recording:
            cassette.save()
        if observer is not None:
            observer(run_id, record)

    try:
        last = await engine.run(world, config.seed, on_turn)
    except Exception as exc:
        store.finish_run(run_id, status="error", reason=f"{type(exc).__name__}: {exc}"[:2000],
                         finished_at=_now())
        raise
    finally:
        await backend.aclose()
    final = last.world_after if last and last.world_after else world
    digest = turn_rows_hash(store, run_id)
    status, reason = (last.status, last.reason) if last else ("error", "no turn played")
    store.finish_run(run_id, status=status, reason=reason, final_world_hash=final.digest(),
                     turn_rows_hash=digest, finished_at=_now())
    recorded = cassette.summary.get("turn_rows_hash") if cassette.summary else None
    if cassette.recording:
        cassette.summary = {"type": "summary", "run_id": run_id, "status": status,
                            "turns": last.turn if last else 0, "turn_rows_hash": digest}
        cassette.save()
    return RunOutcome(run_id, status, reason, last.turn if last else 0, store.path, cassette.path,
                      digest, backend.model_calls, backend.replayed, recorded)


class _Borrowed:
    """A shared backend lent to one episode: everything but closing is passed through."""

    def __init__(self, inner: ModelBackend | None) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "none")

    def fingerprint(self, model: str) -> dict[str, Any]:
        return self.inner.fingerprint(model)  # type: ignore[union-attr]

    async def generate(self, request: Any) -> Any:
        return await self.inner.generate(request)  # type: ignore[union-attr]

    async def aclose(self) -> None:
        pass


def _roles(config: RunConfig, entries: dict[str, ModelEntry]) -> Roles:
    return Roles(entries[config.attacker], entries[config.judge], entries[config.world_manager])


def cassette_path(config: RunConfig, cassette_dir: Path) -> Path:
    return cassette_dir / f"{config.run_id()}.jsonl.gz"


async def run_episode(config: RunConfig, db: Path = DEFAULT_DB, cassette_dir: Path = DEFAULT_CASSETTES,
                      mode: RecordMode = RecordMode.once, *, store: Store | None = None,
                      backend: ModelBackend | None = None,
                      observer: TurnObserver | None = None) -> RunOutcome:
    """Play one episode; model calls go through the run's cassette (``<run_id>.jsonl.gz``).

    An existing cassette supplies the initial world and model entries it was recorded with, so
    a half-done run re-played in mode ``new`` replays its recorded turns and goes on live.
    ``backend`` may be shared between episodes (it is not closed here).
    """
    cassette = Cassette(cassette_path(config, cassette_dir), mode)
    if cassette.meta:
        world, entries = _from_meta(cassette)
    else:
        world = initial_world(load_task(config.task))
        names = {config.attacker, config.judge, config.world_manager}
        entries = {name: get_model(name).for_engine(config.backend) for name in names}
        cassette.meta = {"config": config.__dict__, "initial_world": world.model_dump(mode="json"),
                         "models": {n: e.model_dump(mode="json") for n, e in entries.items()},
                         "vcrime_version": __version__, "fingerprints": {}}
    inner = None
    if cassette.recording:
        inner = backend if backend is not None else make_backend(config.backend, entries)
    return await _play(config, world, _roles(config, entries), cassette, inner, store or Store(db),
                       owns_inner=backend is None, observer=observer)


def _from_meta(cassette: Cassette) -> tuple[WorldState, dict[str, ModelEntry]]:
    meta = cassette.meta
    missing = [k for k in ("config", "initial_world", "models") if k not in meta]
    if missing:
        hint = ("it is a certification cassette: use vcrime-audit certify --replay"
                if meta.get("kind") == "certification" else "re-record the cassette")
        raise CassetteError(f"{cassette.path}: not a sandbox-run cassette (header.meta lacks "
                            f"{', '.join(missing)}); fix: {hint}")
    world = WorldState.model_validate(meta["initial_world"])
    entries = {n: ModelEntry.model_validate(e) for n, e in meta["models"].items()}
    return world, entries


async def replay(cassette_path: Path, db: Path | None = None) -> RunOutcome:
    """Re-run a recorded episode from its cassette alone: no model, no scenario files."""
    cassette = Cassette(cassette_path, RecordMode.none)
    world, entries = _from_meta(cassette)
    config = RunConfig(**cassette.meta["config"])
    store = Store(db or Path("runs") / f"replay-{config.run_id()}.sqlite")
    return await _play(config, world, _roles(config, entries), cassette, None, store)
