"""flagged_turns.csv, the precision review sheet of `audit harm-check` that a person fills in: the
harm check written again keeps the reviews already entered, and refuses to drop one."""

from __future__ import annotations

import csv
import io
from pathlib import Path

REVIEW_COLUMNS = ("review_correct", "review_force", "review_damage")
MAX_SHEET_BYTES = 64 << 20
_FIX = "fix: move the file away (it keeps the reviews), then run the harm check again"

Reviews = dict[tuple[str, str], dict[str, str]]
"""(run id, turn as written) -> the review cells a person filled in."""


class ReviewSheetError(ValueError):
    """A review sheet that cannot be carried over: the message names the file and the fix."""


def entered_reviews(path: Path) -> Reviews:
    """The reviews entered in the sheet at ``path``: rows with any review cell filled (none when
    there is no sheet). A sheet saved by a spreadsheet (a byte-order mark, CRLF) reads the same."""
    try:
        if not path.exists():
            return {}
        if path.stat().st_size > MAX_SHEET_BYTES:
            raise ReviewSheetError(f"{path}: over {MAX_SHEET_BYTES >> 20} MiB, not a review sheet "
                                   f"this command wrote; {_FIX}")
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ReviewSheetError(f"{path}: not UTF-8 text; save it as a UTF-8 CSV, or {_FIX}") from None
    except OSError as exc:
        raise ReviewSheetError(f"{path}: cannot be read ({exc.strerror}); {_FIX}") from None
    try:
        rows = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in ("run_id", "turn", *REVIEW_COLUMNS) if c not in (rows.fieldnames or [])]
        if missing:
            raise ReviewSheetError(f"{path}: no {missing[0]} column, not a review sheet this command "
                                   f"wrote; {_FIX}")
        reviews: Reviews = {}
        for row in rows:
            cells = {c: (row.get(c) or "").strip() for c in REVIEW_COLUMNS}
            if any(cells.values()):
                reviews[((row.get("run_id") or "").strip(), (row.get("turn") or "").strip())] = cells
    except csv.Error as exc:
        raise ReviewSheetError(f"{path}: not a CSV file ({exc}); {_FIX}") from None
    return reviews


def check_carried(path: Path, reviews: Reviews, flagged: set[tuple[str, str]]) -> None:
    """Refuse to write the sheet again when a review entered in it is of a turn no longer flagged:
    the new sheet has no row for it, so it would be lost."""
    dropped = sorted(set(reviews) - flagged)
    if dropped:
        run_id, turn = dropped[0]
        raise ReviewSheetError(f"{path}: holds reviews of {len(dropped)} turn(s) this harm check does "
                               f"not flag (first: run {run_id!r} turn {turn!r}); {_FIX}")
