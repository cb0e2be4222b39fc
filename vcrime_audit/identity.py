"""Does a replayed job equal its recording? The check every replaying path reports."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .rowdigest import first_difference

IDENTICAL, DIFFERENT, UNVERIFIED, RECORDED = "identical", "different", "unverified", "recorded"


@dataclass
class ReplayCheck:
    """Its repr leaves out the row digests and summaries (tens of KB for a long run): ``asyncio.run``
    on the main thread writes the repr of its task, and so of the job's outcome, each time it
    looks up its own SIGINT handler (CPython 3.11, ``signal.getsignal`` of a ``functools.partial``)."""

    hash_field: str
    """The summary field holding the rows hash (``turn_rows_hash`` or ``rows_hash``)."""
    actual_hash: str
    actual_digest: dict[str, Any] = field(repr=False)
    recorded: dict[str, Any] | None = field(repr=False)
    """The summary the cassette held before this job ran (``None``: it had none)."""
    recording: bool
    """Whether this job recorded (and so wrote a new summary)."""
    summary: dict[str, Any] = field(repr=False)
    """The summary this job wrote, or would have written had it recorded."""

    @property
    def recorded_hash(self) -> str | None:
        return None if self.recorded is None else self.recorded.get(self.hash_field)

    @property
    def state(self) -> str:
        if self.recorded is None:
            return RECORDED if self.recording else UNVERIFIED
        return IDENTICAL if self.recorded_hash == self.actual_hash else DIFFERENT

    @property
    def where(self) -> str:
        if self.state != DIFFERENT:
            return ""
        return first_difference((self.recorded or {}).get("rows"), self.actual_digest)

    @property
    def ok(self) -> bool:
        return self.state in (IDENTICAL, RECORDED)

    def brief(self) -> ReplayCheck:
        """The same check without the per-row digests (tens of KB for a long run), unless the
        rows differ and the digests say where: what a worker process sends its parent."""
        if self.state == DIFFERENT:
            return self
        recorded = None if self.recorded is None else {self.hash_field: self.recorded_hash}
        return replace(self, actual_digest={}, recorded=recorded, summary={})

    def line(self, rows: str) -> str:
        """One line for the user."""
        if self.state == IDENTICAL:
            return f"identical {rows}: hash {self.actual_hash} matches the recording"
        if self.state == DIFFERENT:
            return (f"different {rows}: recorded {self.recorded_hash}, got {self.actual_hash}; "
                    f"first difference: {self.where}")
        if self.state == UNVERIFIED:
            return (f"unverified {rows}: the cassette has no summary (its recording was cut short "
                    f"or its last line removed), so hash {self.actual_hash} cannot be checked; fix: "
                    "resume the recording (--record-mode new) or restore the cassette")
        return f"recorded {rows}: hash {self.actual_hash}"


class CheckedOutcome:
    """What a job's outcome says about its replay check (its ``check`` field)."""

    check: ReplayCheck

    @property
    def recorded_hash(self) -> str | None:
        return self.check.recorded_hash

    @property
    def identical(self) -> bool | None:
        """Whether the rows equal the recording's; ``None`` when the cassette had no summary."""
        return None if self.check.recorded is None else self.check.state == IDENTICAL
