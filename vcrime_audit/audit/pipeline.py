"""Store in, AuditResult out: load, compute the metrics and the judge audit, gather harm evidence."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..collector import collector_paused
from ..harm import Lexicon, classify, compiling_default_lexicon, default_lexicon, unscreened
from .followups_load import FollowupRows, read_followup_tables, with_rejudged
from .followups_stats import FollowupsAudit, followups_audit
from .forked import Forked, Prepared
from .judges import JudgeAudit, judge_audit
from .load import AuditInputError, action_texts, load_audit_input, open_store, read_judgments
from .metrics import AttackerMetrics, attacker_metrics
from .other_sections import OtherRows, read_other_rows
from .records import AuditInput
from .stats import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES

if TYPE_CHECKING:
    from ..store import Store
    from .records import StoredJudgment


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
    other: OtherRows | None = None
    """The rows of the report's other sections, read with the rest (None: read when it is written)."""


def flagged_actions(store: Store, flagged: Mapping[str, Sequence[int]]) -> dict[tuple[str, int], dict]:
    return action_texts(store, [(run_id, t) for run_id, turns in flagged.items() for t in turns])


def evidence_of(texts: Mapping[tuple[str, int], dict[str, Any]], flagged: Mapping[str, Sequence[int]],
                lexicon: Lexicon | None = None) -> dict[str, list[dict]]:
    """Over-harm run id -> its turns above the goal's allowance (``flagged``): the attacker's action
    (``texts``: :func:`flagged_actions`) and the lexicon rules that fired."""
    if flagged and lexicon is None:
        lexicon = unscreened(default_lexicon())
    out: dict[str, list[dict[str, Any]]] = {}
    for run_id, turns in sorted(flagged.items()):
        out[run_id] = []
        for turn in turns:
            action = texts[(run_id, turn)]
            reading = classify(action, lexicon)
            out[run_id].append({
                "turn": turn, "verb": action["verb"], "targets": action["targets"],
                "description": action["description"], "force": reading.force_name,
                "damage": reading.damage_name,
                "rules": sorted({f"{e.axis}:{e.level}:{e.rule}" for e in reading.evidence})})
    return out


def _followups_of(tables: FollowupRows, judgments: Sequence[StoredJudgment], **kwargs: Any) -> FollowupsAudit:
    return followups_audit(with_rejudged(tables, judgments), **kwargs)


def _finding_evidence(lexicon: Lexicon | None) -> Prepared[dict[str, list[dict]]]:
    """:func:`evidence_of`, by a child that reads the default lexicon (when it is the one) and
    compiles its patterns while the audit loads and computes the metrics, until it is sent the
    flagged turns and their actions; the lexicon given is inherited, not sent. The evidence is the
    audit's last step: compiling the patterns only as its texts came to need them, the child took
    ~0.2 s after the metrics of the 960-run store's audit (all 211 patterns take ~0.24 s)."""
    return Prepared(compiling_default_lexicon if lexicon is None else None,
                    partial(evidence_of, lexicon=lexicon))


@collector_paused()
def run_audit(db: str | Path, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
              confidence: float = DEFAULT_CONFIDENCE, lexicon: Lexicon | None = None,
              scenarios: Path | None = None, models_root: Path | None = None,
              primary_judge: str | None = None) -> AuditResult:
    """Every metric of the store.

    Every row is read in one read transaction (:meth:`Store.one_moment`): the store as committed
    at one moment, while a study may go on writing it. The children read nothing; they are handed
    what this process read. Where there is a second CPU, forked children share the work
    (:mod:`forked`):
    - one reads the default lexicon while the data loads, then finds the harm evidence in the
      flagged turns' actions;
    - one computes the follow-ups (re-judging, annotation, interrogation) from the moment the
      judgments and the follow-up tables are read, while the rest of the data loads;
    - one computes the judge audit from the moment the data is loaded.
    ``seconds["children"]`` is the wait for the follow-ups, the judge audit and the evidence. On
    one CPU, the lexicon is read only when a turn needs classifying (a stale reading, harm
    evidence); either way a pattern is compiled when a text may match it. The cycle collector is
    paused meanwhile (:func:`collector.collector_paused`).
    """
    seconds = {}
    start = time.perf_counter()
    store = open_store(db, readonly=True)
    finding = _finding_evidence(lexicon)
    jobs: list[Forked[Any] | Prepared[Any]] = [finding]
    try:
        with store:
            with store.one_moment():
                stored = read_judgments(store)
                following = Forked(_followups_of, read_followup_tables(store), stored,
                                   n_resamples=n_resamples, seed=seed, confidence=confidence)
                jobs.append(following)
                data = load_audit_input(store, lexicon=lexicon, scenarios=scenarios,
                                        models_root=models_root, judgments=stored)
                data.turn_rate_cells  # noqa: B018 -- built once, here, for the metrics and the judge audit's child
                seconds["load"] = time.perf_counter() - start
                judging = Forked(judge_audit, data, n_resamples=n_resamples, seed=seed, confidence=confidence)
                jobs.append(judging)
                start = time.perf_counter()
                try:
                    metrics = attacker_metrics(data, n_resamples=n_resamples, seed=seed,
                                               confidence=confidence, primary_judge=primary_judge)
                except ValueError as exc:
                    raise AuditInputError(f"{store.path}: {exc}") from None
                seconds["metrics"] = time.perf_counter() - start
                flagged = {h.run_id: h.excess_turns for h in metrics.harm_runs.values() if h.over_harm}
                finding.start(flagged_actions(store, flagged), flagged)
                other = read_other_rows(store)
            start = time.perf_counter()
            followups = following.result()
            judges = judging.result()
            evidence = finding.result()
            seconds["children"] = time.perf_counter() - start
    except BaseException:
        for job in jobs:
            job.cancel()
        raise
    return AuditResult(data, metrics, judges, evidence, seconds, followups, other)
