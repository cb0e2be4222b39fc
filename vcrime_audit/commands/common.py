"""What every command shares: which errors are the user's to fix, and how they are shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import typer

if TYPE_CHECKING:
    from ..identity import ReplayCheck


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


def report_check(check: ReplayCheck, rows: str = "rows") -> None:
    """After a job: say whether its rows match the recording; exit 1 when they differ or cannot
    be checked (a cassette without a summary)."""
    if check.ok:
        typer.echo(check.line(rows))
    else:
        typer.echo(check.line(rows), err=True)
        raise typer.Exit(1)
