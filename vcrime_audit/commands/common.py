"""What every command shares: which errors are the user's to fix, and how they are shown."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

if TYPE_CHECKING:
    from ..identity import ReplayCheck


def user_errors() -> tuple[type[Exception], ...]:
    """Errors that mean bad input (a file, a model, a cassette, a store) and carry their fix.

    Evaluated only when an exception reaches an ``except user_errors()`` clause, so the
    imports cost nothing on the way in.
    """
    from ..audit.load import AuditInputError
    from ..backends.base import BackendError
    from ..cassette import CassetteError, CassetteMiss
    from ..certify.queryfile import QueryFileError
    from ..followups.inputs import FollowupInputError
    from ..harm import LexiconError
    from ..ids import IdError
    from ..models import ModelError
    from ..scenario import ScenarioError, ScenarioErrors
    from ..store.db import StoreError
    from ..study_processes import WorkerError

    return (AuditInputError, BackendError, CassetteError, CassetteMiss, FollowupInputError,
            IdError, LexiconError, ModelError, QueryFileError, ScenarioError, ScenarioErrors, StoreError,
            ValueError, WorkerError)


def fail(problem: object) -> NoReturn:
    from ..scrub import scrub_text

    typer.echo(f"error: {printable(scrub_text(str(problem)), keep=chr(10))}", err=True)
    raise typer.Exit(2)


class PathErrorsInOneLine(TyperGroup):
    """The command group: an operating-system error about a path the user gave that no command
    turned into its own message (a name too long for the file system, a folder that may not be
    read, found by ``Path.exists``, ``mkdir`` and the like anywhere below) ends as one line that
    names the path and exit 2, not as a traceback. Errors that name no path still raise."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.filename is None:
                raise
            fail(path_error(exc))


def path_error(exc: OSError) -> str:
    """The line for an operating-system error about a path (``exc.filename``) that nothing
    turned into its own message."""
    return (f"{exc.filename}: {exc.strerror or type(exc).__name__}; fix: pass a path that exists "
            "and can be read (or written), within the file system's length limits")


def report_check(check: ReplayCheck, rows: str = "rows") -> None:
    """After a job: say whether its rows match the recording; exit 1 when they differ or cannot
    be checked (a cassette without a summary)."""
    if check.ok:
        typer.echo(check.line(rows))
    else:
        typer.echo(check.line(rows), err=True)
        raise typer.Exit(1)


def make_console(stderr: bool = False) -> Console:
    """A rich console that never wraps a printed line: on a terminal long lines run on (soft
    wrap), and piped output gets a wide page, so a path or a command stays copy-pastable."""
    console = Console(highlight=False, soft_wrap=True, stderr=stderr)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, stderr=stderr, width=200)
    return console


def command_line(*words: object) -> str:
    """A shell command line, quoted where a word needs it."""
    return " ".join(shlex.quote(str(w)) for w in words)


def say_next(*commands: str) -> None:
    """The closing lines of a command: what to run next, one copy-pastable command a line."""
    for command in commands:
        typer.echo(f"next      {command}")


def say_reused(cassette: Path | str, model_calls: int, replayed: int, afresh: str) -> None:
    """One line when a recording was reused instead of (or before) calling a model."""
    if replayed == 0:
        return
    if model_calls == 0:
        typer.echo(f"reused    {cassette} already held this recording: its {replayed} calls were "
                   f"replayed and no model was called; to record afresh: {afresh}")
    else:
        typer.echo(f"resumed   {cassette}: {replayed} recorded calls replayed, {model_calls} new "
                   f"ones recorded; to record everything afresh: {afresh}")


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    """A plain-text table with a header line; columns padded, never wrapped."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    typer.echo(line(headers))
    typer.echo(line(["-" * w for w in widths]))
    for row in rows:
        typer.echo(line(row))


_ESCAPES = {"\r": "\\r", "\x1b": "\\e"}
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: object, keep: str = "\n\t") -> str:
    """``text`` safe for a terminal: control characters (escape sequences, carriage returns,
    C1 controls) and bidirectional overrides are shown as ``\\xNN`` / ``\\uNNNN`` instead of being
    sent to the terminal; the characters in ``keep`` pass through."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch in keep:
            out.append(ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif ch in _BIDI:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def fail_line(problem: object) -> NoReturn:
    """:func:`fail` for text that may come from a file or a model: one escaped line."""
    fail(printable(problem, keep="\n"))


@contextmanager
def reading_store(path: object) -> Iterator[None]:
    """Turn what a damaged store raises while it is read into one :class:`StoreError` line
    naming the store and the fix (errors that already carry their fix pass unchanged)."""
    import sqlite3

    from ..store.errors import DAMAGED_FIX, StoreError, store_error

    try:
        yield
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # the second: SQLite's message
        raise store_error(path, exc, "cannot be read") from None
    except (TypeError, KeyError, IndexError, AttributeError, ValueError, RecursionError) as exc:
        if isinstance(exc, tuple(e for e in user_errors() if e is not ValueError)):
            raise
        detail = str(exc).splitlines()[0][:200] if str(exc) else ""
        raise StoreError(f"{path}: a row holds malformed data ({type(exc).__name__}: {detail}); "
                         f"{DAMAGED_FIX}") from None
