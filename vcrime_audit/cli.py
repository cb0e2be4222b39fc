"""The ``vcrime-audit`` command line. Each command is thin and calls library functions."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from .commands import options
from .commands.common import (
    PathErrorsInOneLine,
    command_line,
    fail,
    make_console,
    print_table,
    printable,
    reading_store,
    report_check,
    say_next,
    say_reused,
    user_errors,
)
from .commands.helptext import plain_flags_and_arguments
from .defaults import DEFAULT_CASSETTES, DEFAULT_DB, DEFAULT_TASK

plain_flags_and_arguments()

app = typer.Typer(help="Sandbox evaluation, audits and certification of open-weight LLMs, offline "
                       "and reproducible.", no_args_is_help=True, pretty_exceptions_enable=False,
                  cls=PathErrorsInOneLine)
console = make_console()

@app.command()
def run(
    task: str = options.TASK,
    seed: int = typer.Option(0, help="Run seed: outcome draws and sampling seeds derive from it."),
    attacker: str = typer.Option("smollm2-135m", help="Attacker model (local_models/)."),
    judge: str = options.JUDGE,
    world_manager: str = options.WORLD_MANAGER,
    backend: str = typer.Option(None, help="Engine that serves the models: local | openai | "
                                           "transformers | vllm (default: the attacker entry's)."),
    max_turns: int = typer.Option(3, help="Turn limit (the paper uses 60; 3 keeps the CPU demo short)."),
    stall_turns: int = options.STALL_TURNS,
    db: Path = typer.Option(DEFAULT_DB, help="SQLite store."),
    cassette_dir: Path = options.CASSETTE_DIR,
    record_mode: str = typer.Option("once", help="once (replay an existing recording, else record) | "
                                    "new | none | all (record afresh), as in vcrpy."),
) -> None:
    """Play one episode and record every model call (an existing recording of the same run is
    replayed instead; --record-mode all records afresh)."""
    import asyncio

    from .cassette import RecordMode
    from .commands.checks import check_run_options
    from .progress import TurnLines
    from .runner import RunConfig, run_episode

    if backend is None:
        from .models import ModelError, get_model

        try:
            backend = get_model(attacker).backend
        except ModelError as exc:
            fail(exc)
    try:
        check_run_options(task=task, seed=seed, max_turns=max_turns, stall_turns=stall_turns,
                          record_mode=record_mode, models=(attacker, judge, world_manager))
    except user_errors() as exc:
        fail(exc)
    config = RunConfig(task=task, seed=seed, attacker=attacker, judge=judge,
                       world_manager=world_manager, backend=backend, max_turns=max_turns,
                       stall_turns=stall_turns)
    started = time.perf_counter()
    try:
        outcome = asyncio.run(run_episode(config, db, cassette_dir, RecordMode(record_mode),
                                          observer=TurnLines(max_turns)))
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
    if record_mode != "none":
        say_reused(outcome.cassette, outcome.model_calls, outcome.replayed_calls,
                   _same_run_afresh(task, seed, attacker, judge, world_manager, backend, max_turns,
                                    stall_turns, db, cassette_dir))
    say_next(command_line("vcrime-audit", "show", outcome.run_id, "--db", outcome.store),
             command_line("vcrime-audit", "replay", outcome.cassette))
    report_check(outcome.check, "turn rows")


def _same_run_afresh(task: str, seed: int, attacker: str, judge: str, world_manager: str, backend: str,
                     max_turns: int, stall_turns: int, db: Path, cassette_dir: Path) -> str:
    """The `run` command line that records this run again, naming only non-default options."""
    words: list[object] = ["vcrime-audit", "run"]
    given = {"--task": (task, DEFAULT_TASK), "--seed": (seed, 0), "--attacker": (attacker, "smollm2-135m"),
             "--judge": (judge, "smollm2-135m"), "--world-manager": (world_manager, "smollm2-135m"),
             "--backend": (backend, "local"), "--max-turns": (max_turns, 5),
             "--stall-turns": (stall_turns, 30), "--db": (db, DEFAULT_DB),
             "--cassette-dir": (cassette_dir, DEFAULT_CASSETTES)}
    for flag, (value, default) in given.items():
        if value != default:
            words += [flag, value]
    return command_line(*words, "--record-mode", "all")


@app.command()
def replay(
    cassette: Path = typer.Argument(..., help="A cassette file (.jsonl.gz)."),
    db: Path = typer.Option(None, help="Store for the replayed run (default runs/replay-<run>.sqlite)."),
) -> None:
    """Re-run a recorded episode from its cassette: no model, no GPU, no network."""
    import asyncio

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
    say_next(command_line("vcrime-audit", "show", outcome.run_id, "--db", outcome.store))
    report_check(outcome.check, "turn rows")


@app.command()
def show(
    run_id: str = typer.Argument(..., help="Run id (see `vcrime-audit runs`)."),
    db: Path = typer.Option(DEFAULT_DB, help="SQLite store."),
) -> None:
    """Print a readable transcript of a stored run."""
    from .store import Store
    from .transcript import render_transcript

    try:
        with reading_store(db), Store.open_existing(db) as store, store.one_moment():
            text = render_transcript(store, run_id)
    except user_errors() as exc:
        fail(printable(exc, keep=""))
    typer.echo(printable(text))


@app.command()
def runs(db: Path = typer.Option(DEFAULT_DB, help="SQLite store.")) -> None:
    """List the runs in a store."""
    from .store import Store

    try:
        with reading_store(db), Store.open_existing(db) as store:
            stored = store.runs()
    except user_errors() as exc:
        fail(printable(exc, keep=""))
    rows = [[printable(str(r[k]), keep="") for k in ("run_id", "status", "turns", "attacker", "judge",
                                                         "reason")] for r in stored]
    print_table(["run", "status", "turns", "attacker", "judge", "why it ended"], rows)
    if rows:
        say_next(command_line("vcrime-audit", "show", rows[0][0], "--db", db))


@app.command()
def models() -> None:
    """List the models in the registry (local_models/)."""
    from .models import ModelError, list_models
    from .scrub import scrub_text

    try:
        entries = list_models()
    except ModelError as exc:
        fail(exc)
    rows, missing = [], []
    for m in entries:
        engines = ",".join(e if e != m.backend else f"{e}*" for e in m.engine_names())
        resolved = m.for_engine(m.backend)
        if resolved.weights.served_name:
            url = resolved.options.get("base_url", "$VCRIME_OPENAI_BASE_URL")
            state, where = "served", f"served as {resolved.weights.served_name} at {url}"
        else:
            try:
                state, where = "installed", str(resolved.weights_path())
            except ModelError:
                state, where = "not installed", (m.weights.hf_repo or m.weights.package
                                                 or m.weights.path or "")
                missing.append(m)
        rows.append([m.name, engines, m.vendor, m.family, state, scrub_text(where)])
    print_table(["model", "engines", "vendor", "family", "weights", "where"], rows)
    typer.echo("(engines: * marks the one used when --backend is not given)")
    for m in missing:
        typer.echo(f"install   {m.name}: {m.weights.install or 'see ' + m.source_file}")


def _add_subcommands() -> None:
    from .commands.audit import app as audit_app
    from .commands.certify import certify
    from .commands.ecosystem import determinism, export_app
    from .commands.followups import annotate, interrogate, rejudge
    from .commands.people import play, rate
    from .commands.plans import rejudge_plan
    from .commands.scenarios import app as scenarios_app
    from .commands.study import merge, study
    from .commands.verify import cassette_app, verify

    app.add_typer(scenarios_app, name="scenarios")
    app.add_typer(audit_app, name="audit")
    app.command()(certify)
    app.command()(rejudge)
    app.command("rejudge-plan")(rejudge_plan)
    app.command()(annotate)
    app.command()(interrogate)
    app.command()(study)
    app.command()(merge)
    app.command()(verify)
    app.add_typer(cassette_app, name="cassette")
    app.command()(play)
    app.command()(rate)
    app.command()(determinism)
    app.add_typer(export_app, name="export")


_add_subcommands()

if __name__ == "__main__":
    app()
