"""What a cassette raises: a file that cannot be used, a request it does not hold, and a call
that failed when it was recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..backends.base import BackendError
from .diff import request_diff


class CassetteError(Exception):
    """A cassette file that cannot be used."""


class NoSuchCassette(CassetteError):
    """A replay-only cassette whose file and journal are both absent."""


class AnotherJobsCassette(CassetteError):
    """The cassette at a job's place records another job (a file copied or renamed there)."""

    def __init__(self, path: Path, where: str, job: str, found: str) -> None:
        super().__init__(f"{path}: {where}: the file is {found}'s recording; fix: put this {job}'s own "
                         "cassette there (from git or a backup), or move the file away to record it "
                         "anew")


class CassetteMiss(Exception):
    """A request that the cassette does not hold, while recording is off."""

    def __init__(self, path: Path, request: dict[str, Any], recorded: dict[str, Any] | None,
                 fingerprint_note: str = "") -> None:
        self.request, self.recorded = request, recorded
        head = (f"replay miss in {path}: no recorded answer for the {request['role']} "
                f"'{request['call']}' call (model {request['model']}); no model was called.")
        if recorded is None:
            body = "The cassette holds no calls."
        else:
            diff = request_diff(recorded, request)
            body = ("Diff against the nearest recorded request:\n" + diff) if diff else fingerprint_note
        fix = ("fix: restore the prompt/scenario/code that produced the recording, or re-record "
               "with --record-mode new (missing calls only) or all")
        super().__init__(f"{head}\n{body}\n{fix}")


class RecordedCallError(BackendError):
    """A call that failed when it was recorded, failing again in the same way on replay."""
