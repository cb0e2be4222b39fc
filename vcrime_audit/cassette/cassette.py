"""A cassette holds every model call of one run; record modes follow vcrpy.

``once``: record into a new cassette; an existing one is only replayed.
``new``: replay what is recorded, record what is not.
``none``: replay only; a miss raises :class:`CassetteMiss` and never calls a model.
``all``: call the model for everything and record afresh.
"""

from __future__ import annotations

from collections import defaultdict
from enum import Enum
from pathlib import Path
from typing import Any

from ..backends.base import GenerateRequest, GenerateResult
from ..canonical import to_plain
from .diff import nearest, request_diff
from .keys import cassette_key
from .persist import FORMAT_VERSION, CassetteFileError, read_records, write_records


class RecordMode(str, Enum):
    once = "once"
    new = "new"
    none = "none"
    all = "all"


class CassetteError(Exception):
    """A cassette file that cannot be used."""


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


class Cassette:
    def __init__(self, path: Path, mode: RecordMode = RecordMode.once) -> None:
        self.path, self.mode = Path(path), RecordMode(mode)
        self.meta: dict[str, Any] = {}
        self.summary: dict[str, Any] | None = None
        self.calls: list[dict[str, Any]] = []
        self._by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._played: dict[str, int] = defaultdict(int)
        existed = self.path.exists()
        if existed and self.mode is not RecordMode.all:
            self._load()
        self.recording = {
            RecordMode.once: not existed, RecordMode.new: True,
            RecordMode.none: False, RecordMode.all: True,
        }[self.mode]
        self.replaying = self.mode is not RecordMode.all

    def _load(self) -> None:
        try:
            records = read_records(self.path)
        except CassetteFileError as exc:
            raise CassetteError(str(exc)) from None
        self.meta = records[0].get("meta", {})
        for number, record in enumerate(records[1:], start=2):
            if record["type"] == "call":
                missing = [k for k in ("key", "request", "fingerprint", "result") if k not in record]
                if missing:
                    raise CassetteError(f"{self.path}: line {number}: call record lacks "
                                        f"{', '.join(missing)}; fix: re-record the cassette")
                self.calls.append(record)
                self._by_key[record["key"]].append(record)
            elif record["type"] == "summary":
                self.summary = record
        self._check_keys()

    def _check_keys(self) -> None:
        for record in self.calls:
            request = GenerateRequest.model_validate(record["request"])
            if cassette_key(request, record["fingerprint"]) != record["key"]:
                raise CassetteError(f"{self.path}: a call record's key does not match its request "
                                    "(edited by hand?); fix: re-record the cassette")

    def fingerprint_for(self, model: str) -> dict[str, Any] | None:
        return self.meta.get("fingerprints", {}).get(model)

    def miss_for_unknown_model(self, model: str) -> CassetteError:
        known = ", ".join(sorted(self.meta.get("fingerprints", {}))) or "none"
        return CassetteError(f"{self.path}: nothing recorded for model '{model}' (recorded: "
                             f"{known}); no model was called; fix: replay with the recorded models "
                             "or record with a backend")

    def play(self, request: GenerateRequest, fingerprint: dict[str, Any]) -> GenerateResult | None:
        if not self.replaying:
            return None
        key = cassette_key(request, fingerprint)
        recorded = self._by_key.get(key, [])
        index = self._played[key]
        if index >= len(recorded):
            return None
        self._played[key] += 1
        return GenerateResult.model_validate(recorded[index]["result"])

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

    def append(self, request: GenerateRequest, fingerprint: dict[str, Any],
               result: GenerateResult, parsed: Any) -> None:
        key = cassette_key(request, fingerprint)
        record = {"type": "call", "key": key, "request": to_plain(request),
                  "fingerprint": fingerprint, "result": to_plain(result), "parsed": parsed}
        self.calls.append(record)
        self._by_key[key].append(record)
        self._played[key] += 1
        self.meta.setdefault("fingerprints", {})[request.model] = fingerprint

    def save(self) -> None:
        records: list[dict[str, Any]] = [{"type": "header", "format": FORMAT_VERSION, "meta": self.meta}]
        records.extend(self.calls)
        if self.summary is not None:
            records.append(self.summary)
        write_records(self.path, records)
