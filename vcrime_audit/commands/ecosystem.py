"""`vcrime-audit determinism` and `vcrime-audit export inspect`: fit with the tools evaluation
researchers already use.

Mounted in cli.py with ``app.command()(determinism)`` and ``app.add_typer(export_app, ...)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import fail, user_errors

export_app = typer.Typer(help="Write a store in other tools' formats.", no_args_is_help=True)


def determinism(
    cassette: Annotated[Path, typer.Argument(help="A cassette file (.jsonl.gz) to re-send calls of.")],
    sample: Annotated[int, typer.Option(help="Recorded calls to send again (seeded sample).")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 0,
    backend: Annotated[str | None, typer.Option(
        help="Backend to send them to (default: the one the cassette was recorded with).")] = None,
    db: Annotated[Path | None, typer.Option(help="Also store the results in this store.")] = None,
) -> None:
    """Send recorded calls to the live backend again; compare the answers byte for byte."""
    import asyncio

    from ..determinism import check, render, run_id_of, store_rows
    from ..progress import on_stderr

    try:
        with on_stderr():
            report = asyncio.run(check(cassette, sample, seed, backend))
        if db is not None:
            from ..store import Store

            with Store(db) as store, store.db.conn:
                store._insert("determinism", store_rows(report, run_id_of(cassette)), replace=True)
    except user_errors() as exc:
        fail(exc)
    for line in render(report):
        typer.echo(line)


@export_app.command("inspect")
def export_inspect(
    db: Annotated[Path, typer.Option("--db", help="SQLite store with runs.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the Inspect eval logs.")],
) -> None:
    """Write Inspect AI eval logs: one per attacker x judge, a sample per run."""
    try:
        from ..export.inspect_logs import export_store
    except ImportError as exc:
        fail(f"export inspect needs inspect-ai ({exc}); fix: pip install 'vcrime-audit[inspect]'")
    if not db.is_file():
        fail(f"{db}: no store at this path; fix: pass --db with a vcrime-audit store")
    try:
        written = export_store(db, out)
    except user_errors() as exc:
        fail(exc)
    for path, n in written:
        typer.echo(f"{path}  {n} sample(s)")
    typer.echo(f"view with: inspect view --log-dir {out}")
