"""A folder's files replaced as a set: written into a staging folder inside it, then moved in.

A process killed while writing leaves no file cut short; the files a reader checks first are
withdrawn before the others move, and move in last, so whichever of them is present belongs to the
whole set it was written with."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

PREFIX = ".staging-"
"""A staging folder's name: PREFIX, the writing process's id, '-', a random part."""


@contextmanager
def staging_folder(folder: Path) -> Iterator[Path]:
    """A new, empty folder inside ``folder`` (made if need be), removed on leaving; staging folders
    that processes no longer running left behind are removed first."""
    folder.mkdir(parents=True, exist_ok=True)
    for left in folder.glob(f"{PREFIX}*"):
        if left.is_dir() and not left.is_symlink() and not _running(left.name[len(PREFIX):].split("-")[0]):
            shutil.rmtree(left, ignore_errors=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=folder))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def move_in(staging: Path, folder: Path, names: Sequence[str], last: Sequence[str]) -> None:
    """Move the files ``names`` and then ``last`` (paths relative to both folders) from ``staging``
    into ``folder``; ``last`` are removed from ``folder`` before anything moves."""
    for name in last:
        (folder / name).unlink(missing_ok=True)
    for name in [*names, *last]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / name, folder / name)


def _running(pid: str) -> bool:
    if not pid.isdigit():
        return True  # not one of ours: left alone
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
