"""What every command shares: which errors are the user's to fix, and how they are shown."""

from __future__ import annotations

from typing import NoReturn

import typer


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input (a file, a model, a cassette, a store) and carry their fix.

    Evaluated only when an exception reaches an ``except user_errors()`` clause, so the
    imports cost nothing on the way in.
    """
    from ..audit.harm import LexiconError
    from ..audit.load import AuditInputError
    from ..backends.base import BackendError
    from ..cassette import CassetteError, CassetteMiss
    from ..certify.queryfile import QueryFileError
    from ..followups.inputs import FollowupInputError
    from ..models import ModelError
    from ..scenario import ScenarioError, ScenarioErrors
    from ..store.db import StoreError

    return (AuditInputError, BackendError, CassetteError, CassetteMiss, FollowupInputError,
            LexiconError, ModelError, QueryFileError, ScenarioError, ScenarioErrors, StoreError,
            ValueError)


def fail(problem: object) -> NoReturn:
    typer.echo(f"error: {problem}", err=True)
    raise typer.Exit(2)


def check_identical(recorded_hash: str | None, rows_hash: str, rows: str = "rows") -> None:
    """After a replay: say that the rows match the recording, or exit 1. Silent when there is
    no recorded hash to compare with (a fresh recording, or an interrupted one)."""
    if recorded_hash is None:
        return
    if recorded_hash == rows_hash:
        typer.echo(f"identical {rows}: hash {rows_hash} matches the recording")
    else:
        typer.echo(f"different {rows}: recorded {recorded_hash}, got {rows_hash}", err=True)
        raise typer.Exit(1)
