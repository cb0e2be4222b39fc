"""Ids that become file names, and paths that must stay inside their folder.

Task, run, model and other ids name files (``tasks/<id>.yaml``, ``<run_id>.jsonl.gz``,
``local_models/<name>.yaml``), so each is checked before it is joined to a folder: letters,
digits, ``_``, ``.`` and ``-``, starting with a letter or digit, at most :data:`MAX_ID` characters,
no ``..``. :func:`inside` then resolves the joined path and refuses one that escapes its folder
(symbolic links included).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

MAX_ID = 128
MAX_RUN_ID = 200  # a task id, its seed and a hash
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MAX_SEED = 2**63 - 1


class IdError(ValueError):
    """An id or a derived path that is not allowed, with the fix."""


def check_id(value: object, what: str = "id", limit: int = MAX_ID) -> str:
    """``value`` when it is a valid id; else :class:`IdError` naming ``what`` (e.g. ``--task``)."""
    if not isinstance(value, str):
        raise IdError(f"{what}: expected a text id, got {type(value).__name__}; fix: use letters, "
                      "digits, '_', '.' and '-'")
    shown = value if len(value) <= 60 else value[:57] + "..."
    shown = shown.encode("unicode_escape").decode("ascii")
    if len(value) > limit:
        raise IdError(f"{what}: id '{shown}' is {len(value)} characters long, more than {limit}; "
                      "fix: use a shorter id")
    if not ID_PATTERN.fullmatch(value) or ".." in value:
        raise IdError(f"{what}: '{shown}' is not a valid id; fix: use letters, digits, '_', '.' "
                      "and '-' only, starting with a letter or digit, without '..' or '/'")
    return value


def inside(folder: Path | str, name: str | Path) -> Path:
    """``folder / name``, refused when it resolves outside ``folder``."""
    path = Path(folder) / name
    try:
        path.resolve().relative_to(Path(folder).resolve())
    except ValueError:
        raise IdError(f"{path}: resolves outside {folder}; fix: use a plain name inside "
                      f"{folder}") from None
    except RuntimeError:  # a symbolic-link loop (Python < 3.13)
        raise IdError(f"{path}: symbolic-link loop; fix: remove the link") from None
    return path


def check_seed(value: int, what: str = "--seed") -> int:
    """A seed the store can hold: a whole number from 0 to 2**63 - 1."""
    if not 0 <= value <= MAX_SEED:
        raise IdError(f"{what}: {value} is outside 0 .. 2**63-1 (a 64-bit store column); fix: "
                      "use a smaller non-negative seed")
    return value


def shown_path(path: Path | str, root: Path | None = None) -> str:
    """A path for the record: relative to the working directory, else to ``root`` (default:
    the project folder), else its last two parts; never an absolute path of this machine."""
    path = Path(path)
    if not path.is_absolute():
        return path.as_posix()
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError):  # a symbolic-link loop
        return Path(*path.parts[-2:]).as_posix()
    for base in (Path.cwd(), root or project_root()):
        try:
            return resolved.relative_to(base.resolve()).as_posix()
        except ValueError:
            continue
    return Path(*resolved.parts[-2:]).as_posix()


@lru_cache(maxsize=1)
def project_root() -> Path:
    """The folder holding the package (the checkout, or site-packages for an install), resolved
    once: every run's start names its cassette relative to it."""
    return Path(__file__).resolve().parent.parent
