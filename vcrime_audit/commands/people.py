"""`vcrime-audit play` and `vcrime-audit rate`: people in the loop, through local web pages.

Registered in cli.py with ``app.command()(play)`` and ``app.command()(rate)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..defaults import DEFAULT_DB
from . import options
from .checks import check_turn_limits
from .common import fail, user_errors

LOOPBACK_HELP = "Address to listen on (default 127.0.0.1: this machine only). Anything else exposes the page."


def _serve_until_stopped(server: Any) -> None:
    """Run the server; Ctrl+C ends it (uvicorn re-raises the signal after shutting down)."""
    import asyncio
    try:
        asyncio.run(server)
    except KeyboardInterrupt:
        pass


def _warn_if_exposed(host: str) -> None:
    from ..web.security import LOOPBACK

    if host not in LOOPBACK:
        typer.echo(f"warning   listening on {host}: anyone who can reach it can use the page", err=True)


def play(
    task: str = options.TASK,
    judge: str = options.JUDGE,
    world_manager: str = options.WORLD_MANAGER,
    player: str = typer.Option("player", help="Your name; the run's attacker is human:<player>."),
    host: str = typer.Option("127.0.0.1", help=LOOPBACK_HELP),
    port: int = typer.Option(0, help="Port (default 0: a free one, printed)."),
    seed: int = typer.Option(None, help="Run seed (default: the first one this player has not used "
                                        "on this task)."),
    max_turns: int = typer.Option(60, help="Turn limit (the paper's 60)."),
    stall_turns: int = options.STALL_TURNS,
    db: Path = typer.Option(DEFAULT_DB, help="SQLite store the run goes into."),
    cassette_dir: Path = options.CASSETTE_DIR,
    models_from: Path = typer.Option(None, help="Answer the Judge and World Manager from this "
                                                 "recorded cassette instead of running them."),
) -> None:
    """Play the Attacker yourself in a browser, against the Judge and World Manager models."""
    from ..models import ModelError, human_entry
    from ..web.game import new_game
    from ..web.human_backend import player_model
    from ..web.play_app import play_app
    from ..web.serve import bind, serve, url

    try:
        check_turn_limits(max_turns, stall_turns)
    except user_errors() as exc:
        fail(exc)
    if models_from is not None and not models_from.is_file():
        fail(f"--models-from {models_from}: no such cassette file")
    try:
        human_entry(player_model(player))
    except ModelError as exc:
        fail(f"--player: {exc}")
    try:
        game = new_game(task, player_model(player), judge, world_manager, db, cassette_dir, seed=seed,
                        max_turns=max_turns, stall_turns=stall_turns, models_from=models_from)
        sock = bind(host, port)
    except user_errors() as exc:
        fail(exc)
    typer.echo(f"run       {game.config.run_id()} (task {task}, seed {game.config.seed}, "
               f"attacker {game.config.attacker})")
    typer.echo(f"open      {url(sock)}")
    _warn_if_exposed(host)
    typer.echo("stop      Ctrl+C (an unfinished game stays unfinished in the store)")
    _serve_until_stopped(serve(play_app(game, host), sock))
    if game.outcome is not None:
        o = game.outcome
        typer.echo(f"finished  {o.run_id}: {o.status} after {o.turns} turn(s) ({o.reason})")
        typer.echo(f"store     {o.store}")
        typer.echo(f"cassette  {o.cassette}")
        typer.echo(f"turn hash {o.turn_rows_hash}")
    elif game.error:
        fail(f"the game stopped: {game.error}")
    else:
        typer.echo(f"stopped   after {len(game.history)} turn(s); the run stays unfinished")


def rate(
    db: Path = typer.Option(..., "--db", help="SQLite store with finished runs."),
    runs: str = typer.Option(None, help="Comma-separated run ids (default: a seeded sample of --sample "
                                        "finished runs)."),
    rater: str = typer.Option("rater", help="Your name; ratings are stored under it."),
    sample: int = typer.Option(25, help="How many runs the default sample draws (the paper's 25)."),
    max_turns: int = typer.Option(200, help="At most this many key turns (a seeded sample)."),
    seed: int = typer.Option(0, help="Seed of the run and turn samples."),
    host: str = typer.Option("127.0.0.1", help=LOOPBACK_HELP),
    port: int = typer.Option(0, help="Port (default 0: a free one, printed)."),
) -> None:
    """Rate the Judge and World Manager on key turns of stored runs, in a browser."""
    from ..models import PLAYER_NAME
    from ..ratings import rated, select_key_turns
    from ..store import Store
    from ..web.rate_app import rate_app
    from ..web.serve import bind, serve, url

    if not db.is_file():
        fail(f"--db {db}: no such store; pass a store written by `vcrime-audit run` or `play`")
    if not PLAYER_NAME.fullmatch(rater):
        fail(f"--rater '{rater}': use 1-32 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if sample < 1 or max_turns < 1:
        fail("--sample and --max-turns must be at least 1")
    try:
        with Store(db) as store:  # what SQLite raises here is one line naming the store
            chosen = [r.strip() for r in runs.split(",") if r.strip()] if runs else None
            items = select_key_turns(store, chosen, n_runs=sample, max_turns=max_turns, seed=seed)
            if not items:
                fail(f"--db {db}: the chosen runs have no key turn (checkpoint, critical failure, risky "
                     "flag or catastrophic draw); pick other runs with --runs")
            sock = bind(host, port)
            n_runs = len({k.run_id for k in items})
            typer.echo(f"rate      {len(items)} key turns of {n_runs} run(s); {len(rated(store, rater))} "
                       f"already rated by {rater}")
            typer.echo(f"open      {url(sock)}")
            _warn_if_exposed(host)
            typer.echo("stop      Ctrl+C (every rating is saved when submitted)")
            _serve_until_stopped(serve(rate_app(store, items, rater, host), sock))
            typer.echo(f"rated     {len(rated(store, rater))} turn(s) by {rater} in {db}")
    except user_errors() as exc:
        fail(exc)
