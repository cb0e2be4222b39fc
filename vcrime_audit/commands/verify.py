"""`vcrime-audit verify` and `vcrime-audit cassette upgrade`."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import fail, user_errors

cassette_app = typer.Typer(help="Cassette files: upgrade the format.", no_args_is_help=True)
WARM = ("vcrime_audit.verify", "vcrime_audit.harm:prepare_default_lexicon")
"""What each verifying process loads before its first runs (``warm_workers.warm``)."""


def verify(
    paths: list[Path] = typer.Argument(None, help="Cassettes, or folders of cassettes. With --db: "
                                       "folders to look for the store's cassettes in."),
    db: Path = typer.Option(None, help="Store whose every run, certification and follow-up is "
                            "re-derived from its cassette and compared row by row."),
    repair: bool = typer.Option(False, "--repair", help="Finish jobs whose finish was interrupted, "
                                "from their cassettes."),
    workers: int = typer.Option(1, min=1, help="With --db: processes to replay the runs in (one "
                                "per core is fastest; --repair uses one)."),
) -> None:
    """Re-derive jobs from their cassettes (no model) and compare every row; exit 1 on any problem."""
    if db is None and not paths:
        fail("give --db STORE, cassette files or folders (e.g. vcrime-audit verify cassettes/)")
    pool = None
    if db is not None and workers > 1 and not repair and db.is_file():  # started while this imports
        from ..warm_workers import process_pool

        pool = process_pool(workers, WARM)
    from ..verify import Verifier

    verifier = Verifier(paths or [], repair, progress=lambda v: typer.echo(v.line()), workers=workers,
                        pool=pool)
    try:
        problems = verifier.store(db) if db is not None else []
        if db is None:
            verifier.cassettes(paths)
    except user_errors() as exc:
        fail(exc)
    finally:
        verifier.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    for problem in problems:
        typer.echo(f"store problem: {problem}", err=True)
    bad = [v for v in verifier.verdicts if not v.ok]
    typer.echo(f"{len(verifier.verdicts) - len(bad)} verified, {len(bad)} with problems"
               + (f", {len(problems)} store problem(s)" if problems else ""))
    if bad or problems:
        raise typer.Exit(1)


@cassette_app.command("upgrade")
def upgrade(
    cassettes: list[Path] = typer.Argument(..., help="Format-1 or -2 cassettes to rewrite in format 3."),
    db: Path = typer.Option(None, help="The store follow-up cassettes were recorded on."),
) -> None:
    """Rewrite format-1 and -2 cassettes in format 3 (checksums, request hashes, chain hash); a
    format-1 one only after checking its replay."""
    from ..upgrade import upgrade_cassette

    for path in cassettes:
        try:
            typer.echo(upgrade_cassette(path, db))
        except user_errors() as exc:
            fail(exc)
