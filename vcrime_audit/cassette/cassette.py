"""A cassette holds every model call of one job; record modes follow vcrpy.

``once``: record into a new cassette; an existing one is only replayed.
``new``: replay what is recorded, record what is not (how an interrupted job resumes).
``none``: replay only; a miss raises :class:`CassetteMiss` and never calls a model.
``all``: call the model for everything and record afresh.

While a job records, new call records wait in memory until the job commits a unit (a turn, a
conversation, an item); :meth:`Cassette.flush` then appends them to the journal and syncs it,
before the store commits the unit. :meth:`Cassette.close_with_summary` writes the summary (with
the chain hash over every record) and :meth:`Cassette.finalise` writes the final file: the
journal's lines, compressed unit by unit as they were flushed (only their checksums stay in
memory, :class:`~vcrime_audit.cassette.final_gzip.WrittenLines`).
"""

from __future__ import annotations

import contextvars
from collections import defaultdict
from enum import Enum
from pathlib import Path
from typing import Any

from ..backends.base import GenerateRequest, GenerateResult
from ..canonical import to_plain
from .call_records import check_call, check_keys, read_request
from .diff import nearest
from .errors import CassetteError, CassetteMiss, NoSuchCassette, RecordedCallError
from .final_gzip import WrittenLines
from .keys import REQUEST_HASHED, cassette_key
from .lines import (
    RequestUnread,
    chain_update,
    checksummed,
    gives_request,
    gives_request_at,
    record_checksum,
    record_line,
)
from .persist import (
    FORMAT_VERSION,
    CassetteFileError,
    Journal,
    cassette_exists,
    drop_empty_journal,
    journal_path,
    read_final,
    read_journal,
    write_final_bytes,
)

Pending = tuple[object | None, dict[str, Any], GenerateRequest]
"""A call recorded and not yet flushed: (its unit, its record, its request)."""

UNIT: contextvars.ContextVar[object | None] = contextvars.ContextVar("cassette_unit", default=None)
"""The unit of work the calls of the current task belong to (set by drivers that run several
units at once); :meth:`Cassette.flush` of a unit writes only its calls and untagged ones."""


class RecordMode(str, Enum):
    once = "once"
    new = "new"
    none = "none"
    all = "all"


class Cassette:
    def __init__(self, path: Path, mode: RecordMode = RecordMode.once, *,
                 unread_requests: bool = False) -> None:
        """``unread_requests`` (replay only, mode ``none``): call lines are read without their
        requests where that can be done (:func:`.lines.read_without_request`); a replay compares
        its own request's bytes with the line's first. The job that plays it must end with
        :meth:`check_unread` (``runner`` does), which reads in full each call line no replay
        proved, so that a line whose request is not JSON is refused as it is when read in full."""
        self.path, self.mode = Path(path), RecordMode(mode)
        self.meta: dict[str, Any] = {}
        self.summary: dict[str, Any] | None = None
        self._calls: list[tuple[dict[str, Any], bytes]] = []
        """The call records read from the file, with their lines. Calls recorded since are not
        kept once flushed: they are never looked up (a recording job asks its model), and their
        messages are most of a recording job's memory."""
        self._unread_requests = unread_requests and self.mode is RecordMode.none
        self.format = FORMAT_VERSION
        self._written = WrittenLines()
        self._by_key: dict[str, list[tuple[dict[str, Any], bytes | None]]] = defaultdict(list)
        """Each key's call records, in order, with their lines (format 2)."""
        self._played: dict[str, int] = defaultdict(int)
        self._pending: list[Pending] = []
        self._journal: Journal | None = None
        self._from_journal = False
        self._summary_in_journal = False
        drop_empty_journal(self.path)
        existed = cassette_exists(self.path)
        if not existed and self.mode is RecordMode.none:
            raise NoSuchCassette(f"{self.path}: no such cassette (neither the file nor its journal "
                                "exists); fix: check the path, or record it first (--record-mode once)")
        if existed and self.mode is RecordMode.all:
            journal_path(self.path).unlink(missing_ok=True)
        elif existed:
            self._load()
        self.existed = existed and self.mode is not RecordMode.all
        self.recording = {
            RecordMode.once: not existed, RecordMode.new: True,
            RecordMode.none: False, RecordMode.all: True,
        }[self.mode]
        self.replaying = self.mode is not RecordMode.all

    # -- reading ---------------------------------------------------------------------------

    @property
    def _where(self) -> Path:
        """The file the records were read from (the journal, while a job records or after a
        crash; else the final file)."""
        return journal_path(self.path) if self._from_journal else self.path

    def _load(self) -> None:
        self._from_journal = journal_path(self.path).exists()
        try:
            read = read_journal if self._from_journal else read_final
            records, lines = read(self.path, self._unread_requests)
        except CassetteFileError as exc:
            raise CassetteError(str(exc)) from None
        where = self._where
        self.format = int(records[0]["format"])
        self.meta = records[0].get("meta") or {}
        chain, kept = "", []
        for number, (record, line) in enumerate(zip(records, lines, strict=True), start=1):
            kind = record["type"]
            if number > 1 and kind == "header":
                raise CassetteError(f"{where}: record {number}: a second header; fix: re-record")
            if self.summary is not None:
                raise CassetteError(f"{where}: record {number} follows the summary (lines added "
                                    "or moved); fix: re-record the cassette or restore it from git")
            if kind == "call":
                check_call(where, number, record, self.format)
                self._calls.append((record, line))
                self._by_key[record["key"]].append((record, line if self.format >= 2 else None))
            elif kind == "summary":
                self.summary = record
                self._check_chain(where, record, chain, len(kept))
                self._summary_in_journal = self._from_journal
                continue
            if self.format >= 2:
                chain = chain_update(chain, record["checksum"])
                kept.append(line)
        if self.format < 2:
            check_keys(self.path, self.calls)
        else:
            self._written.add(kept, compress=False)

    def _check_chain(self, where: Path, summary: dict[str, Any], chain: str, count: int) -> None:
        if self.format < 2:
            return
        if summary.get("records") != count or summary.get("chain") != chain:
            raise CassetteError(
                f"{where}: the summary's chain hash does not match the records before it (a "
                f"record was dropped, added or reordered: {count} found, summary says "
                f"{summary.get('records')!r}); fix: re-record the cassette or restore it from git")

    def _read_in_full(self, record: dict[str, Any], line: bytes) -> dict[str, Any]:
        if type(record) is RequestUnread and record.span is not None:
            read_request(self._where, record, line, self.format)
        return record

    @property
    def calls(self) -> list[dict[str, Any]]:
        """The call records read from the file, each with its request."""
        return [self._read_in_full(record, line) for record, line in self._calls]

    def check_unread(self) -> None:
        """Read in full every call line whose request no replay proved equal to its own
        (:meth:`play`): a line whose request is not JSON, or not a request, is refused as it is
        when the file is read in full. Nothing to do after a replay that played every call."""
        for record, line in self._calls:
            self._read_in_full(record, line)

    @property
    def verifiable(self) -> bool:
        """Whether replay can check this recording: it has a summary."""
        return self.summary is not None

    def fingerprint_for(self, model: str) -> dict[str, Any] | None:
        legacy = self.meta.get("fingerprints", {})
        if isinstance(legacy, dict) and model in legacy:
            return legacy[model]
        for record, line in self._calls:  # read in full one by one: the first calls name the models
            if self._read_in_full(record, line)["request"].get("model") == model:
                return record["fingerprint"]
        return None

    def recorded_models(self) -> list[str]:
        legacy = self.meta.get("fingerprints", {})
        names = set(legacy) if isinstance(legacy, dict) else set()
        return sorted(names | {c["request"].get("model") for c in self.calls})

    def miss_for_unknown_model(self, model: str) -> CassetteError:
        known = ", ".join(self.recorded_models()) or "none"
        return CassetteError(f"{self.path}: nothing recorded for model '{model}' (recorded: "
                             f"{known}); no model was called; fix: replay with the recorded models "
                             "or record with a backend")

    def play(self, request: GenerateRequest, fingerprint: dict[str, Any]) -> GenerateResult | None:
        """The next recorded answer to ``request``; a recorded failure is raised again."""
        if not self.replaying or not self._by_key:
            return None
        plain = request.plain()
        key = cassette_key(request, fingerprint, self.format)
        recorded = self._by_key.get(key, [])
        index = self._played[key]
        if index >= len(recorded):
            return None
        self._played[key] += 1
        record, line = recorded[index]
        canonical, proven = request.canonical_bytes(), False
        if type(record) is RequestUnread and record.span is not None and line is not None:
            proven = gives_request_at(line, record, canonical)
            if proven:  # the line's request is this one (gives_request_at says why)
                record["request"], record.span = plain, None
            else:
                read_request(self._where, record, line, self.format)
        if record["fingerprint"] != fingerprint or not (
                proven or (line is not None and gives_request(line, record, canonical))
                or record["request"] == plain) or (
                self.format >= REQUEST_HASHED and record["request_hash"] != request.digest()):
            raise CassetteError(f"{self.path}: a recorded {request.role} '{request.call}' call's key "
                                "does not match its request (edited?); fix: re-record the cassette "
                                "or restore it from git")
        if record.get("error") is not None:
            raise RecordedCallError(record["error"]["message"])
        try:
            return GenerateResult.model_validate(record["result"])
        except ValueError as exc:
            raise CassetteError(f"{self.path}: the recorded result of a {request.role} "
                                f"'{request.call}' call is malformed ({str(exc).splitlines()[0]}); "
                                "fix: re-record the cassette") from None

    def miss(self, request: GenerateRequest, fingerprint: dict[str, Any]) -> CassetteMiss:
        wanted = to_plain(request)
        near = nearest(wanted, [c["request"] for c in self.calls])
        note = ""
        if near is not None:
            recorded_fp = next(c["fingerprint"] for c in self.calls if c["request"] == near)
            if recorded_fp != fingerprint:
                note = ("Same request, different backend fingerprint:\n"
                        f"recorded  {recorded_fp}\nrequested {fingerprint}")
        return CassetteMiss(self.path, wanted, near, note)

    # -- recording -------------------------------------------------------------------------

    def append(self, request: GenerateRequest, fingerprint: dict[str, Any],
               result: GenerateResult | None, parsed: Any, error: dict[str, str] | None = None) -> None:
        """A new call record (an answer, or an ``error`` {type, message}); written at the next
        :meth:`flush` of its unit, which also makes its key and checksum (a recording job
        flushes on a worker thread, and hashing lets other threads run)."""
        record: dict[str, Any] = {"type": "call", "request": request.plain(), "fingerprint": fingerprint}
        if error is not None:
            record["error"] = error
        else:
            record["result"] = to_plain(result)
            record["parsed"] = parsed
        self._pending.append((UNIT.get(), record, request))

    def _sealed(self, record: dict[str, Any], request: GenerateRequest) -> str:
        """A new call record's key, checksum and (format 3) request hash, set; its line."""
        if self.format >= REQUEST_HASHED:
            record["request_hash"] = request.digest()
        record["key"] = cassette_key(request, record["fingerprint"], self.format)
        record["checksum"], line = checksummed(record, {"request": request.canonical()})
        return line

    def _open_journal(self) -> Journal:
        if self._journal is not None:
            return self._journal
        fresh = not journal_path(self.path).exists() or not self._from_journal
        if fresh:
            journal_path(self.path).unlink(missing_ok=True)
        elif self._summary_in_journal:
            _drop_last_line(journal_path(self.path))
            self._summary_in_journal = False
        self._journal = Journal(self.path)
        if fresh:
            if not self._written:  # a new cassette, or a format-1 one read (its calls go along)
                self.format = max(2, self.format)  # a format-1 one goes on in format 2
                header = {"type": "header", "format": self.format, "meta": self.meta}
                self._written.add([record_line(header), *map(record_line, self.calls)],
                                  compress=False)
            lines = self._written.lines()
            self._journal.append([{}] * len(lines), lines)
        self._from_journal = True
        return self._journal

    def flush(self, unit: object | None = None) -> int:
        """Make the calls of ``unit`` (all pending calls when ``None``) durable; returns how many."""
        if not self.recording:
            return 0
        self._open_journal()
        if unit is None:
            due = self.take_pending()
        else:
            due = [p for p in self._pending if p[0] in (unit, None)]
            self._pending = [p for p in self._pending if p[0] not in (unit, None)]
        return self.flush_taken(due)

    @property
    def journal_open(self) -> bool:
        return self._journal is not None

    def take_pending(self) -> list[Pending]:
        """Every call not yet flushed, taken out of the pending list (new calls start a new one)."""
        due, self._pending = self._pending, []
        return due

    def flush_taken(self, due: list[Pending]) -> int:
        """Make calls taken by :meth:`take_pending` durable. With the journal open it touches
        neither ``calls`` nor the pending list, so it may run on a worker thread while the event
        loop records the next calls."""
        if due:
            journal = self._journal if self._journal is not None else self._open_journal()
            lines = [self._sealed(record, request) for _, record, request in due]
            journal.append([p[1] for p in due], lines)
            self._written.add(lines)
        return len(due)

    def discard_pending(self) -> None:
        """Forget calls of units that never committed (a crash): a resumed job asks again."""
        self._pending = []

    def close_with_summary(self, fields: dict[str, Any]) -> None:
        """Flush everything, then append the summary with the chain hash over every record."""
        self.flush()
        chain = ""
        for checksum in self._written.checksums:
            chain = chain_update(chain, checksum)
        summary = {"type": "summary", **fields, "records": len(self._written), "chain": chain}
        summary["checksum"] = record_checksum(summary)
        line = record_line(summary)
        self._open_journal().append([summary], [line])
        self._summary_in_journal = True
        self.summary = summary

    def finalise(self) -> None:
        """Write the final, byte-stable cassette (the journal's lines and the summary, compressed)
        and remove the journal."""
        if self._journal is None and not self._from_journal:
            return
        summary = [record_line(self.summary)] if self.summary is not None and self._summary_in_journal \
            else []
        write_final_bytes(self.path, self._written.final_bytes(summary))
        self.close()
        journal_path(self.path).unlink(missing_ok=True)
        self._from_journal = False

    def save(self) -> None:
        """Flush every pending call and write the final file (no summary: a job's end writes
        that through :meth:`close_with_summary`)."""
        self.flush()
        self.finalise()

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    @property
    def pending_finalise(self) -> bool:
        """A journal that already holds its summary: the job finished, the compression did not."""
        return self._from_journal and self._summary_in_journal


def _drop_last_line(path: Path) -> None:
    data = path.read_bytes()
    cut = data.rstrip(b"\n").rfind(b"\n") + 1
    with open(path, "r+b") as handle:
        handle.truncate(cut)
