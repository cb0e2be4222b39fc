"""Store in, AuditResult out: load, compute the metrics and the judge audit, gather harm evidence."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..harm import Lexicon, classify, default_lexicon
from .figures import Drawing
from .followups_report import audit_followups
from .followups_stats import FollowupsAudit
from .forked import Forked
from .judges import JudgeAudit, judge_audit
from .load import AuditInputError, action_texts, load_audit_input, open_store
from .metrics import AttackerMetrics, attacker_metrics
from .records import AuditInput
from .stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from ..store import Store


@dataclass(frozen=True)
class AuditResult:
    data: AuditInput
    metrics: AttackerMetrics
    judges: JudgeAudit
    evidence: dict[str, list[dict[str, Any]]]
    """Over-harm run id -> the attacker actions above the goal's allowance and the rules that fired."""
    seconds: dict[str, float] = field(default_factory=dict, compare=False)
    followups: FollowupsAudit | None = None
    """Re-judging, behaviour annotation and interrogation (vcrime_audit.audit.followups_stats)."""
    drawing: Drawing | None = field(default=None, compare=False, repr=False)
    """The figures, being drawn since the metrics were ready (``run_audit(figures=...)``)."""


def harm_evidence(store: Store, metrics: AttackerMetrics,
                  lexicon: Lexicon | None = None) -> dict[str, list[dict]]:
    flagged = {h.run_id: h for h in metrics.harm_runs.values() if h.over_harm}
    if flagged and lexicon is None:
        lexicon = default_lexicon()
    texts = action_texts(store, [(run_id, t) for run_id, h in flagged.items() for t in h.excess_turns])
    out: dict[str, list[dict[str, Any]]] = {}
    for run_id, h in sorted(flagged.items()):
        out[run_id] = []
        for turn in h.excess_turns:
            action = texts[(run_id, turn)]
            reading = classify(action, lexicon)
            out[run_id].append({
                "turn": turn, "verb": action["verb"], "targets": action["targets"],
                "description": action["description"], "force": reading.force_name,
                "damage": reading.damage_name,
                "rules": sorted({f"{e.axis}:{e.level}:{e.rule}" for e in reading.evidence})})
    return out


def run_audit(db: str | Path, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
              confidence: float = DEFAULT_CONFIDENCE, lexicon: Lexicon | None = None,
              scenarios: Path | None = None, models_root: Path | None = None,
              primary_judge: str | None = None, figures: Path | None = None) -> AuditResult:
    """Every metric of the store.

    Where there is a second CPU, the judge audit is computed by a forked child from the moment
    the data is loaded, and with ``figures`` (a folder) the figures are drawn into it by another
    from the moment the metrics exist (:class:`forked.Forked`); :func:`report.write_report` waits
    for the figures. ``seconds["judges"]`` is then the wait for the judge audit. The default
    lexicon is compiled only when a turn needs classifying (a stale reading, harm evidence).
    """
    seconds = {}
    start = time.perf_counter()
    store = open_store(db, readonly=True)
    jobs: list[Forked[Any] | Drawing] = []
    try:
        data = load_audit_input(store, lexicon=lexicon, scenarios=scenarios, models_root=models_root)
        seconds["load"] = time.perf_counter() - start
        judging = Forked(judge_audit, data, n_resamples=n_resamples, seed=seed, confidence=confidence)
        jobs.append(judging)
        start = time.perf_counter()
        try:
            metrics = attacker_metrics(data, n_resamples=n_resamples, seed=seed, confidence=confidence,
                                       primary_judge=primary_judge)
        except ValueError as exc:
            raise AuditInputError(f"{store.path}: {exc}") from None
        seconds["metrics"] = time.perf_counter() - start
        drawing = Drawing(metrics, figures, data.synthetic) if figures is not None else None
        if drawing is not None:
            jobs.append(drawing)
        evidence = harm_evidence(store, metrics, lexicon)
        start = time.perf_counter()
        followups = audit_followups(store, n_resamples=n_resamples, seed=seed, confidence=confidence)
        seconds["followups"] = time.perf_counter() - start
        start = time.perf_counter()
        judges = judging.result()
        seconds["judges"] = time.perf_counter() - start
    except BaseException:
        for job in jobs:
            job.cancel()
        raise
    finally:
        store.db.conn.close()
    return AuditResult(data, metrics, judges, evidence, seconds, followups, drawing)
