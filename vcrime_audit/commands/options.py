"""Options that `run` and `play` declare alike (one declaration, one help text)."""

from __future__ import annotations

import typer

from ..defaults import DEFAULT_CASSETTES, DEFAULT_TASK

TASK = typer.Option(DEFAULT_TASK, help="Task id (see scenarios/tasks).")
JUDGE = typer.Option("smollm2-135m", help="Judge model (local_models/).")
WORLD_MANAGER = typer.Option("smollm2-135m", help="World Manager model.")
STALL_TURNS = typer.Option(30, help="Stop after this many turns without a new checkpoint.")
CASSETTE_DIR = typer.Option(DEFAULT_CASSETTES, help="Where the run's cassette goes.")
