"""Determinism self-test: send recorded calls to the live backend again and compare the answers
byte for byte.

Definitions:
- a call is *identical* when the live answer's text, encoded as UTF-8, equals the recorded
  text byte for byte; otherwise it *diverged*, at the first byte offset where the two differ
  (the shorter length when one is a prefix of the other);
- the *rate* is identical calls / calls sent;
- the sample is ``random.Random(seed).sample`` of the cassette's call positions, in file order.

Recorded calls are read through ``Cassette(path, RecordMode.none).calls``; nothing is written
to the cassette.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .backends.base import GenerateRequest, ModelBackend
from .canonical import canonical_json
from .cassette import Cassette, CassetteError, RecordMode
from .models import ModelEntry, ModelError, get_model
from .progress import progress

# fingerprint "engine" -> backend name
ENGINES = {"llama-cpp-python": "local", "openai-compatible": "openai", "transformers": "transformers",
           "vllm": "vllm"}


@dataclass
class CallCheck:
    index: int
    role: str
    call: str
    model: str
    identical: bool
    first_difference: int | None
    recorded_bytes: int
    live_bytes: int
    fingerprint_match: bool


@dataclass
class DeterminismReport:
    cassette: Path
    backend: str
    seed: int
    n_recorded: int
    checks: list[CallCheck] = field(default_factory=list)
    recorded_fingerprints: dict[str, Any] = field(default_factory=dict)
    live_fingerprints: dict[str, Any] = field(default_factory=dict)

    @property
    def n_identical(self) -> int:
        return sum(c.identical for c in self.checks)

    @property
    def rate(self) -> float | None:
        return self.n_identical / len(self.checks) if self.checks else None


def first_difference(recorded: bytes, live: bytes) -> int | None:
    """Offset of the first differing byte; ``None`` when the two are identical."""
    if recorded == live:
        return None
    for i, (a, b) in enumerate(zip(recorded, live, strict=False)):
        if a != b:
            return i
    return min(len(recorded), len(live))


def sample_positions(n_calls: int, n: int, seed: int) -> list[int]:
    if n < 1:
        raise ValueError(f"--sample must be at least 1, got {n}")
    return sorted(random.Random(seed).sample(range(n_calls), min(n, n_calls)))


def recorded_backend(calls: list[dict[str, Any]]) -> str:
    """The backend a cassette was recorded with, read from its fingerprints."""
    engines = {c["fingerprint"].get("engine") for c in calls}
    names = {ENGINES.get(str(e)) for e in engines}
    if len(names) != 1 or None in names:
        raise ValueError(f"cannot tell the recording backend from the fingerprints' engines "
                         f"{sorted(map(str, engines))}; fix: pass --backend")
    return names.pop()  # type: ignore[return-value]


def entries_for(meta: dict[str, Any], models: set[str], backend: str,
                recorded: str) -> dict[str, ModelEntry]:
    """The recorded model entries when re-sending to the recording backend; otherwise the
    registry's entries of the same names (they say which weights each engine loads)."""
    stored = meta.get("models", {})
    entries = {}
    for name in sorted(models):
        if backend == recorded and name in stored:
            entries[name] = ModelEntry.model_validate(stored[name])
        else:
            try:
                entries[name] = get_model(name)
            except ModelError as exc:
                raise ModelError(f"{exc}; the cassette was recorded with backend '{recorded}'") from None
    return entries


def load_calls(path: Path) -> tuple[Cassette, list[dict[str, Any]]]:
    if not Path(path).is_file():
        raise CassetteError(f"{path}: no such cassette; fix: pass the path of a .jsonl.gz cassette")
    cassette = Cassette(Path(path), RecordMode.none)
    if not cassette.calls:
        raise CassetteError(f"{path}: the cassette holds no calls; nothing to re-send")
    return cassette, list(cassette.calls)


async def check(path: Path, sample: int = 10, seed: int = 0, backend_name: str | None = None,
                backend: ModelBackend | None = None) -> DeterminismReport:
    """Re-send ``sample`` recorded calls of the cassette at ``path`` and compare the answers.

    ``backend`` (optional, not closed here) is used instead of building ``backend_name``."""
    from .backends.registry import make_backend

    cassette, calls = load_calls(path)
    positions = sample_positions(len(calls), sample, seed)
    chosen = [calls[i] for i in positions]
    recorded = recorded_backend(chosen)
    name = backend_name or recorded
    models = {c["request"]["model"] for c in chosen}
    owned = backend is None
    if backend is None:
        backend = make_backend(name, entries_for(cassette.meta, models, name, recorded))
    report = DeterminismReport(Path(path), name, seed, len(calls))
    try:
        for model in sorted(models):
            report.recorded_fingerprints[model] = next(c["fingerprint"] for c in chosen
                                                       if c["request"]["model"] == model)
            report.live_fingerprints[model] = backend.fingerprint(model)
        with progress("determinism", len(chosen)) as tick:
            for index, record in zip(positions, chosen, strict=True):
                request = GenerateRequest.model_validate(record["request"])
                result = await backend.generate(request)
                want = record["result"]["text"].encode("utf-8")
                got = result.text.encode("utf-8")
                diff = first_difference(want, got)
                same_fp = (canonical_json(report.live_fingerprints[request.model])
                           == canonical_json(record["fingerprint"]))
                report.checks.append(CallCheck(index, request.role, request.call, request.model,
                                               diff is None, diff, len(want), len(got), same_fp))
                tick(f"call {index}: {'identical' if diff is None else 'diverged'}")
    finally:
        if owned:
            await backend.aclose()
    return report


def run_id_of(path: Path) -> str | None:
    """The run id of a sandbox-run cassette (``None`` for other kinds)."""
    from .runner import RunConfig

    config = Cassette(Path(path), RecordMode.none).meta.get("config", {})
    try:
        return RunConfig(**config).run_id() if "task" in config and "attacker" in config else None
    except TypeError:
        return None


def store_rows(report: DeterminismReport, run_id: str | None) -> list[dict[str, Any]]:
    """`determinism` rows (migration m008_determinism), one per call sent."""
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return [{"cassette": str(report.cassette), "call_index": c.index, "backend": report.backend,
             "run_id": run_id, "seed": report.seed, **{k: v for k, v in asdict(c).items()
                                                        if k != "index"},
             "identical": int(c.identical), "fingerprint_match": int(c.fingerprint_match),
             "live_fingerprint": canonical_json(report.live_fingerprints.get(c.model)),
             "checked_at": now} for c in report.checks]


def render(report: DeterminismReport) -> list[str]:
    lines = [f"cassette     {report.cassette} ({report.n_recorded} calls recorded)",
             f"backend      {report.backend}; {len(report.checks)} call(s) sent again "
             f"(sample seed {report.seed})"]
    for model in sorted(report.live_fingerprints):
        rec, live = report.recorded_fingerprints[model], report.live_fingerprints[model]
        same = canonical_json(rec) == canonical_json(live)
        lines.append(f"fingerprint  {model}: {'same as recorded' if same else 'DIFFERS'}")
        lines.append(f"  recorded   {canonical_json(rec)}")
        if not same:
            lines.append(f"  live       {canonical_json(live)}")
    for c in report.checks:
        what = (f"identical ({c.recorded_bytes} bytes)" if c.identical else
                f"diverged at byte {c.first_difference} (recorded {c.recorded_bytes} bytes, "
                f"live {c.live_bytes})")
        lines.append(f"call {c.index:>4}  {c.role}/{c.call:<14} {what}")
    rate = report.rate
    lines.append(f"rate         {report.n_identical}/{len(report.checks)} identical"
                 + (f" ({rate:.2f})" if rate is not None else ""))
    return lines


async def check_study(study: Any, shard: tuple[int, int], k: int) -> list[DeterminismReport]:
    """``k`` recorded calls per run of the study (sample seeded by the run's seed) sent to the
    study's backend again; results go to the study's store (`determinism` table)."""
    from .backends.registry import make_backend
    from .runner import cassette_path
    from .store import Store
    from .study import grid

    configs = [c for c in grid(study, shard) if cassette_path(c, study.cassette_dir).is_file()]
    if not configs:
        return []
    names = {n for c in configs for n in (c.attacker, c.judge, c.world_manager)}
    backend = make_backend(study.backend, {n: get_model(n) for n in names})
    store = Store(study.db)
    reports = []
    try:
        for config in configs:
            report = await check(cassette_path(config, study.cassette_dir), k, config.seed,
                                 study.backend, backend=backend)
            with store.db.conn:
                store._insert("determinism", store_rows(report, config.run_id()), replace=True)
            reports.append(report)
    finally:
        store.close()
        await backend.aclose()
    return reports
