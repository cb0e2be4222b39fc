"""The driver every follow-up shares: cassette (record or replay), recorded calls, its `followups`
row, a hash of the rows it wrote, and the outcome the command prints.

A workflow says what it reads (``prepare``), which models it needs, what it does with a session
(``work``), and which rows are its result (``result_rows``); this module does the rest.
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from .. import __version__
from ..agents.calling import CallRecord, call_structured
from ..backends.base import GenerateRequest, Message, ModelBackend
from ..backends.registry import make_backend
from ..canonical import canonical_json, content_hash
from ..cassette import Cassette, CassetteError, RecordMode
from ..cassette.cassette import UNIT
from ..cassette.errors import check_recorded_job
from ..defaults import DEFAULT_CASSETTES
from ..fingerprints import weights_digest
from ..identity import CheckedOutcome, ReplayCheck
from ..ids import shown_path
from ..models import ModelEntry, get_model
from ..progress import progress
from ..recorder import FOLLOWUP, Recorder, now
from ..rowdigest import row_digest
from ..statuses import DONE
from ..store import Store

META_KIND = "followup"
T = TypeVar("T", bound=BaseModel)
C = TypeVar("C")
Item = TypeVar("Item")
R = TypeVar("R")


def with_role_sampling(entry: ModelEntry, role: str, **overrides: Any) -> ModelEntry:
    """A copy of ``entry`` whose sampling for ``role`` has ``overrides`` (``None`` values dropped)."""
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return entry
    sampling = {**entry.sampling, role: {**entry.sampling.get(role, {}), **given}}
    return entry.model_copy(update={"sampling": sampling})


@dataclass(frozen=True)
class Prepared:
    """What a follow-up will work on: items, a hash of every input its requests depend on, and
    the sample description stored with it."""

    items: list[Any]
    inputs_hash: str
    sample: dict[str, Any]
    models: list[str]


@dataclass
class FollowupOutcome(CheckedOutcome):
    followup_id: str
    kind: str
    store: Path
    cassette: Path
    rows_hash: str
    n_items: int
    n_failed: int
    model_calls: int
    replayed_calls: int
    check: ReplayCheck
    sample: dict[str, Any] = field(default_factory=dict)


class Session:
    """Structured calls through the cassette; every attempt lands in ``followup_calls``."""

    def __init__(self, recorder: Recorder, concurrency: int = 1) -> None:
        self.recorder = recorder
        self.store, self.followup_id, self.cassette = recorder.store, recorder.job_id, recorder.cassette
        self.backend = recorder.backend
        self.concurrency = concurrency
        self.seq = 0

    async def each(self, items: Sequence[Item], work: Callable[[Item], Awaitable[R]]) -> list[R]:
        """``work`` on every item, at most ``concurrency`` at once (a batching backend such as
        vLLM then serves them together); the first error cancels the rest."""
        semaphore = asyncio.Semaphore(self.concurrency)

        with progress(self.followup_id.split("-")[0], len(items)) as tick:

            async def one(item: Item) -> R:
                async with semaphore:
                    result = await work(item)
                tick(f"{self.backend.model_calls} calls made, {self.backend.replayed} replayed")
                return result

            tasks = [asyncio.ensure_future(one(item)) for item in items]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def call(self, entry: ModelEntry, *, item: str, role: str, call: str,
                   messages: list[Message], output_model: type[T], schema: dict[str, Any],
                   seed: int, check: Callable[[T], str | None] | None = None) -> T:
        """One structured call (with its retries); raises ModelOutputError when none is usable."""
        records: list[CallRecord] = []
        unit = object()
        token = UNIT.set(unit)
        try:
            return await call_structured(self.backend, entry, role=role, call=call,
                                         messages=messages, output_model=output_model,
                                         schema=schema, seed=seed, check=check, records=records)
        finally:
            UNIT.reset(token)
            self._save(item, records, unit)

    async def ask_text(self, entry: ModelEntry, *, item: str, role: str, call: str,
                       messages: list[Message], seed: int,
                       parse: Callable[[str], Any | None]) -> str:
        """One unconstrained call (no schema, no retry); `parse` decides whether it was usable."""
        sampling = entry.sampling_for(role, seed)
        request = GenerateRequest(role=role, call=call, model=entry.name, messages=messages,
                                  sampling=sampling, output_schema=None, attempt=0)
        unit = object()
        token = UNIT.set(unit)
        try:
            result = await self.backend.generate(request)
        finally:
            UNIT.reset(token)
        usable = parse(result.text) is not None
        self._save(item, [CallRecord(
            role=role, call=call, attempt=0, model=entry.name, request_hash=content_hash(request),
            ok=usable, error="" if usable else "no parseable answer in the free text",
            finish_reason=result.finish_reason, prompt_tokens=result.usage.prompt_tokens,
            completion_tokens=result.usage.completion_tokens, seconds=result.seconds)], unit)
        return result.text

    def _save(self, item: str, records: list[CallRecord], unit: object) -> None:
        rows = []
        for record in records:
            rows.append({"followup_id": self.followup_id, "seq": self.seq, "item": item,
                         **record.fields(), "ok": int(record.ok)})
            self.seq += 1
        if rows:
            self.recorder.commit(lambda: self.store.insert_rows("followup_calls", rows), unit)


class Workflow(ABC, Generic[C]):
    """One kind of follow-up."""

    kind: ClassVar[str]

    @staticmethod
    @abstractmethod
    def config_from(data: dict[str, Any]) -> C: ...

    @abstractmethod
    def prepare(self, store: Store, config: C) -> Prepared: ...

    @abstractmethod
    def clear(self, store: Store, followup_id: str) -> None:
        """Delete the rows an earlier attempt of this follow-up wrote."""

    @abstractmethod
    async def work(self, session: Session, config: C, prepared: Prepared,
                   entries: dict[str, ModelEntry]) -> int:
        """Do the calls and write the rows; return how many items failed (no usable answer)."""

    @abstractmethod
    def result_rows(self, store: Store, followup_id: str) -> dict[str, list[dict[str, Any]]]:
        """The rows that make up this follow-up's result (hashed for replay checks)."""


def followup_id(kind: str, config: dict[str, Any], inputs_hash: str) -> str:
    return f"{kind}-{content_hash({'config': config, 'inputs': inputs_hash}, 4)}"


def rows_hash(rows: dict[str, list[dict[str, Any]]]) -> str:
    return content_hash(rows)


def _entries_from_meta(cassette: Cassette, kind: str) -> dict[str, ModelEntry]:
    meta = cassette.meta
    if meta.get("kind") != META_KIND or meta.get("followup") != kind:
        found = meta.get("followup") or meta.get("kind") or "an episode"
        raise CassetteError(f"{cassette.path}: not a {kind} cassette (it records {found}); fix: pass "
                            f"a cassette written by `vcrime-audit {kind}`")
    missing = [k for k in ("config", "inputs_hash", "models") if k not in meta]
    if missing:
        raise CassetteError(f"{cassette.path}: header.meta lacks {', '.join(missing)}; fix: "
                            "re-record the cassette")
    return {n: ModelEntry.model_validate(e) for n, e in meta["models"].items()}


def _check_inputs(cassette: Cassette, store: Store, kind: str, inputs_hash: str) -> None:
    if cassette.meta["inputs_hash"] != inputs_hash:
        raise CassetteError(
            f"{cassette.path}: the {kind} inputs in {store.path} (hash {inputs_hash}) differ from "
            f"those it was recorded on (hash {cassette.meta['inputs_hash']}); no model was called; "
            "fix: replay into the store the recording was made on (for the committed cassettes: "
            "`vcrime-audit replay cassettes/robotics_company__data_theft-s0-e3005c10.jsonl.gz --db STORE`)")


async def record(workflow: Workflow[C], config: C, store: Store, *, backend_name: str,
                 cassette_dir: Path = DEFAULT_CASSETTES, mode: RecordMode = RecordMode.once,
                 inner: ModelBackend | None = None, concurrency: int = 1) -> FollowupOutcome:
    """Run a follow-up on ``store``; calls go through ``<cassette_dir>/<followup id>.jsonl.gz``.

    ``inner`` (default: the registry's backend ``backend_name``) is closed at the end.
    ``concurrency`` items are in flight at once; it changes no result, so it is not part of the
    config (nor of the follow-up id).
    """
    if concurrency < 1:
        raise ValueError(f"--concurrency must be at least 1, got {concurrency}")
    prepared = workflow.prepare(store, config)
    config_json = _config_json(config)
    fid = followup_id(workflow.kind, config_json, prepared.inputs_hash)
    cassette = Cassette(Path(cassette_dir) / f"{fid}.jsonl.gz", mode)
    if cassette.meta:
        entries = _entries_from_meta(cassette, workflow.kind)
        _check_inputs(cassette, store, workflow.kind, prepared.inputs_hash)
        recorded = cassette.meta["config"]
        check_recorded_job(cassette.path, "follow-up", followup_id(workflow.kind, recorded,
                                                                   cassette.meta["inputs_hash"]),
                           fid, recorded if isinstance(recorded, dict) else None, config_json)
    else:
        entries = {name: get_model(name) for name in sorted(set(prepared.models))}
        cassette.meta = {"kind": META_KIND, "followup": workflow.kind, "config": config_json,
                         "inputs_hash": prepared.inputs_hash, "sample": prepared.sample,
                         "models": {n: e.recorded() for n, e in entries.items()},
                         "vcrime_version": __version__, "fingerprints": {}}
    if cassette.recording and inner is None:
        inner = make_backend(backend_name, entries)
    return await _play(workflow, config, prepared, fid, store, cassette,
                       inner if cassette.recording else None, entries, backend_name, concurrency)


async def replay(workflow: Workflow[C], cassette_file: Path, store: Store,
                 found_for: str | None = None) -> FollowupOutcome:
    """Re-run a recorded follow-up on ``store`` from its cassette alone: no model, no registry.
    ``found_for``: the follow-up id it was found for (``verify``: a store's row), which another
    follow-up's cassette is not."""
    if not Path(cassette_file).is_file():
        raise CassetteError(f"{cassette_file}: no such cassette; fix: pass the path of a "
                            f"{workflow.kind}-*.jsonl.gz file")
    cassette = Cassette(Path(cassette_file), RecordMode.none)
    entries = _entries_from_meta(cassette, workflow.kind)
    config = workflow.config_from(cassette.meta["config"])
    prepared = workflow.prepare(store, config)
    _check_inputs(cassette, store, workflow.kind, prepared.inputs_hash)
    fid = followup_id(workflow.kind, _config_json(config), prepared.inputs_hash)
    if found_for is not None:
        check_recorded_job(cassette.path, "follow-up", fid, found_for)
    return await _play(workflow, config, prepared, fid, store, cassette, None, entries, "replay")


def _config_json(config: Any) -> dict[str, Any]:
    """The config as plain JSON data (tuples as lists), as the cassette header stores it."""
    return json.loads(canonical_json(asdict(config)))


async def _play(workflow: Workflow[C], config: C, prepared: Prepared, fid: str, store: Store,
                cassette: Cassette, inner: ModelBackend | None, entries: dict[str, ModelEntry],
                backend_name: str, concurrency: int = 1) -> FollowupOutcome:
    recorder = Recorder(FOLLOWUP, fid, cassette, store, inner)
    session = Session(recorder, concurrency)

    models = [{"name": e.name, "family": e.family, "vendor": e.vendor, "source": "registry",
               "fingerprint": weights_digest(session.backend, e.name)} for e in entries.values()]

    def clear(s: Store) -> None:
        workflow.clear(s, fid)
        s.db.conn.execute("DELETE FROM followup_calls WHERE followup_id = ?", [fid])

    recorder.start({
        "followup_id": fid, "kind": workflow.kind, "config": canonical_json(asdict(config)),
        "inputs_hash": prepared.inputs_hash, "sample": canonical_json(prepared.sample),
        "backend": backend_name, "cassette": shown_path(cassette.path),
        "reason": "", "n_items": len(prepared.items), "n_failed": None, "rows_hash": None,
        "vcrime_version": __version__, "started_at": now(), "finished_at": None},
        clear=clear, also=lambda s: s.insert_rows("models", models, replace=True))
    try:
        n_failed = await workflow.work(session, config, prepared, entries)
    except BaseException as exc:
        recorder.crash(exc)
        raise
    finally:
        await recorder.aclose()
    rows = workflow.result_rows(store, fid)
    digest = rows_hash(rows)
    check = recorder.finish(
        {"status": DONE, "n_failed": n_failed, "rows_hash": digest},
        {"followup_id": fid, "rows_hash": digest, "n_items": len(prepared.items),
         "n_failed": n_failed, "rows": row_digest(rows)}, "rows_hash")
    return FollowupOutcome(fid, workflow.kind, store.path, cassette.path, digest, len(prepared.items),
                           n_failed, recorder.backend.model_calls, recorder.backend.replayed, check,
                           prepared.sample)
