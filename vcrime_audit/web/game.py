"""One game of a person against the Judge and World Manager, played through the normal runner."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from ..agents.attacker import Action, PlanOutput
from ..agents.render import observation
from ..backends.base import ModelBackend
from ..backends.registry import make_backend
from ..cassette import Cassette, RecordingBackend, RecordMode
from ..engine import RUNNING, TurnRecord
from ..models import get_model
from ..runner import RunConfig, RunOutcome, cassette_path, run_episode
from ..scenario import initial_world, load_task
from ..store import Store
from ..world import WorldState
from .human_backend import HumanAndModels, HumanBackend


@dataclass(frozen=True)
class PlayedTurn:
    """A finished turn as the Attacker learns it: its own answer and what the crew sees after."""

    turn: int
    plan: PlanOutput | None
    action: Action | None
    seen_after: str
    seconds: float


@dataclass
class Game:
    config: RunConfig
    db: Path
    cassette_dir: Path
    models: ModelBackend
    human: HumanBackend
    world: WorldState
    history: list[PlayedTurn] = field(default_factory=list)
    outcome: RunOutcome | None = None
    error: str = ""
    status: str = RUNNING
    reason: str = ""

    @property
    def finished(self) -> bool:
        return self.outcome is not None or bool(self.error)

    def observe(self, run_id: str, record: TurnRecord) -> None:
        self.world = record.world_after or self.world
        seconds = sum(c.seconds for c in record.calls if c.role == "attacker")
        self.history.append(PlayedTurn(record.turn, record.plan, record.action,
                                       observation(self.world), seconds))
        self.status, self.reason = record.status, record.reason

    async def play(self) -> None:
        backend = HumanAndModels(self.human, self.models)
        try:
            self.outcome = await run_episode(self.config, self.db, self.cassette_dir, RecordMode.once,
                                             backend=backend, observer=self.observe)
            self.status, self.reason = self.outcome.status, self.outcome.reason
        except Exception as exc:  # shown on the page; the run is marked 'error' in the store
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            await backend.aclose()
            self.human.notify()


def recorded_models(path: Path) -> ModelBackend:
    """Judge and World Manager answers replayed from a recorded cassette (no model is run)."""
    return RecordingBackend(Cassette(path, RecordMode.none), None)


def free_seed(config: RunConfig, db: Path, cassette_dir: Path, limit: int = 10_000) -> RunConfig:
    """The config with the first seed whose run id is in neither the store nor the cassettes,
    so a player's new game never replays or overwrites an earlier one."""
    with Store(db) as store:
        for seed in range(limit):
            candidate = RunConfig(**{**config.__dict__, "seed": seed})
            if store.run(candidate.run_id()) is None and not cassette_path(candidate, cassette_dir).exists():
                return candidate
    raise ValueError(f"--seed: the first {limit} seeds are taken for this player and task; pass --seed")


def new_game(task: str, player_model: str, judge: str, world_manager: str, db: Path, cassette_dir: Path,
             *, seed: int | None = None, max_turns: int = 60, stall_turns: int = 30,
             models_from: Path | None = None) -> Game:
    """Set up a game: check names, pick a free seed, make the backend of the Judge and WM."""
    world = initial_world(load_task(task))
    entries = {name: get_model(name) for name in (judge, world_manager)}
    backends = {e.backend for e in entries.values()}
    if len(backends) != 1:
        raise ValueError(f"--judge and --world-manager: one backend must serve both; got "
                         f"{', '.join(f'{n} ({e.backend})' for n, e in entries.items())}")
    backend_name = backends.pop()
    player = get_model(player_model)
    config = RunConfig(task=task, seed=seed or 0, attacker=player.name, judge=judge,
                       world_manager=world_manager, backend=backend_name, max_turns=max_turns,
                       stall_turns=stall_turns)
    if seed is None:
        config = free_seed(config, db, cassette_dir)
    elif cassette_path(config, cassette_dir).exists():
        raise ValueError(f"--seed {seed}: {cassette_path(config, cassette_dir)} exists (this player "
                         "already played this task with this seed); omit --seed to take a free one")
    models = recorded_models(models_from) if models_from else make_backend(backend_name, entries)
    return Game(config, db, cassette_dir, models, HumanBackend(player.name.split(":", 1)[1]), world)


async def wait_for_change(game: Game, timeout: float) -> None:
    """Until the person is asked again or the game ends (or ``timeout`` seconds pass)."""
    pending = game.human.pending
    if game.finished or (pending is not None and not pending.future.done()):
        return
    try:
        await asyncio.wait_for(game.human.changed.wait(), timeout)
    except asyncio.TimeoutError:
        pass
