"""What a cassette raises: a file that cannot be used, a request it does not hold, and a call
that failed when it was recorded."""

from __future__ import annotations

from collections.abc import Mapping
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


def check_recorded_job(path: Path, job: str, recorded_id: str, wanted_id: str,
                       recorded: Mapping[str, Any] | None = None, wanted: Mapping[str, Any] | None = None,
                       where: str = "header.meta.config") -> None:
    """Raise :class:`AnotherJobsCassette` unless the cassette at ``path`` records the job asked
    for: a job's id hashes what makes it, so equal ids are the same job. Played as the asked job,
    another one's cassette would replay as itself and be stored under the asked id, or go on
    recording into that file. With both jobs' fields (``recorded``, ``wanted``, at ``where`` in the
    header), the line names the first field that differs, in the asked job's order."""
    if recorded_id == wanted_id:
        return
    names = [*wanted, *(k for k in recorded if k not in wanted)] \
        if recorded is not None and wanted is not None else []
    name = next((k for k in names if (k in recorded, recorded.get(k)) != (k in wanted, wanted.get(k))),
                None)
    if name is None:
        what = f"header.meta makes it {job} {recorded_id}, but it was found for {job} {wanted_id}"
    else:
        shown = [repr(side[name]) if name in side else "absent" for side in (recorded, wanted)]
        what = f"{where}.{name} is {shown[0]}, but {job} {wanted_id} has {shown[1]}"
    raise AnotherJobsCassette(f"{path}: {what}: the file is {job} {recorded_id}'s recording; fix: put "
                              f"this {job}'s own cassette there (from git or a backup), or move the "
                              "file away to record it anew")


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
