"""The ``vcrime-audit`` command line. Each command is thin and calls library functions."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import typer
from rich.console import Console

from .commands.common import check_identical, fail, user_errors
from .defaults import DEFAULT_CASSETTES, DEFAULT_DB, DEFAULT_TASK

app = typer.Typer(help="Sandbox evaluation, audits and certification of open-weight LLMs, offline "
                       "and reproducible.", no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()

@app.command()
def run(
    task: str = typer.Option(DEFAULT_TASK, help="Task id (see scenarios/tasks)."),
    seed: int = typer.Option(0, help="Run seed: outcome draws and sampling seeds derive from it."),
    attacker: str = typer.Option("smollm2-135m", help="Attacker model (local_models/)."),
    judge: str = typer.Option("smollm2-135m", help="Judge model."),
    world_manager: str = typer.Option("smollm2-135m", help="World Manager model."),
    backend: str = typer.Option("local", help="Backend that serves the models."),
    max_turns: int = typer.Option(5, help="Turn limit (the paper uses 60; 5 keeps the CPU demo short)."),
    stall_turns: int = typer.Option(30, help="Stop after this many turns without a new checkpoint."),
    db: Path = typer.Option(DEFAULT_DB, help="SQLite store."),
    cassette_dir: Path = typer.Option(DEFAULT_CASSETTES, help="Where the run's cassette goes."),
    record_mode: str = typer.Option("once", help="once | new | none | all (as in vcrpy)."),
) -> None:
    """Play one episode and record every model call."""
    from .cassette import RecordMode
    from .runner import RunConfig, run_episode

    config = RunConfig(task=task, seed=seed, attacker=attacker, judge=judge,
                       world_manager=world_manager, backend=backend, max_turns=max_turns,
                       stall_turns=stall_turns)
    started = time.perf_counter()
    try:
        outcome = asyncio.run(run_episode(config, db, cassette_dir, RecordMode(record_mode)))
    except user_errors() as exc:
        fail(exc)
    seconds = time.perf_counter() - started
    console.print(f"run       {outcome.run_id}: {outcome.status} after {outcome.turns} turn(s)"
                  f" ({outcome.reason})")
    console.print(f"store     {outcome.store}")
    console.print(f"cassette  {outcome.cassette}")
    console.print(f"calls     {outcome.model_calls} to the model, {outcome.replayed_calls} replayed;"
                  f" {seconds:.1f} s")
    console.print(f"turn hash {outcome.turn_rows_hash}")
    console.print(f"next      vcrime-audit show {outcome.run_id} --db {outcome.store}")


@app.command()
def replay(
    cassette: Path = typer.Argument(..., help="A cassette file (.jsonl.gz)."),
    db: Path = typer.Option(None, help="Store for the replayed run (default runs/replay-<run>.sqlite)."),
) -> None:
    """Re-run a recorded episode from its cassette: no model, no GPU, no network."""
    from .runner import replay as replay_run

    started = time.perf_counter()
    try:
        outcome = asyncio.run(replay_run(cassette, db))
    except user_errors() as exc:
        fail(exc)
    seconds = time.perf_counter() - started
    rate = outcome.turns / seconds if seconds else float("inf")
    console.print(f"replayed  {outcome.run_id}: {outcome.status} after {outcome.turns} turn(s); "
                  f"{outcome.replayed_calls} calls, 0 to a model; {seconds:.2f} s ({rate:.1f} turns/s)")
    console.print(f"store     {outcome.store}")
    check_identical(outcome.recorded_hash, outcome.turn_rows_hash, "turn rows")


@app.command()
def show(
    run_id: str = typer.Argument(..., help="Run id (see `vcrime-audit runs`)."),
    db: Path = typer.Option(DEFAULT_DB, help="SQLite store."),
) -> None:
    """Print a readable transcript of a stored run."""
    from .store import Store
    from .transcript import render_transcript

    try:
        text = render_transcript(Store(db), run_id)
    except user_errors() as exc:
        fail(exc)
    typer.echo(text)


@app.command()
def runs(db: Path = typer.Option(DEFAULT_DB, help="SQLite store.")) -> None:
    """List the runs in a store."""
    from .store import Store

    for r in Store(db).runs():
        typer.echo(f"{r['run_id']}  {r['status']:<9} {r['turns']:>3} turns  "
                   f"attacker={r['attacker']}  {r['reason']}")


@app.command()
def models() -> None:
    """List the models in the registry (local_models/)."""
    from .models import ModelError, list_models

    try:
        entries = list_models()
    except ModelError as exc:
        fail(exc)
    for m in entries:
        if m.weights.served_name:
            url = m.options.get("base_url", "$VCRIME_OPENAI_BASE_URL")
            where = f"served as {m.weights.served_name} at {url}"
        else:
            try:
                where = str(m.weights_path())
            except ModelError as exc:
                where = f"NOT INSTALLED: {exc}"
        typer.echo(f"{m.name:<20} {m.backend:<13} {m.vendor}/{m.family}  {where}")


def _add_subcommands() -> None:
    from .commands.audit import app as audit_app
    from .commands.certify import certify
    from .commands.followups import annotate, interrogate, rejudge
    from .commands.plans import rejudge_plan
    from .commands.scenarios import app as scenarios_app
    from .commands.study import merge, study

    app.add_typer(scenarios_app, name="scenarios")
    app.add_typer(audit_app, name="audit")
    app.command()(certify)
    app.command()(rejudge)
    app.command("rejudge-plan")(rejudge_plan)
    app.command()(annotate)
    app.command()(interrogate)
    app.command()(study)
    app.command()(merge)


_add_subcommands()

if __name__ == "__main__":
    app()
