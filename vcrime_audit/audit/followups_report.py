"""Report sections and summary.json part for the follow-ups (formatting only).

``followups_markdown(audit)`` gives the report lines, ``followups_json(audit)`` the summary part;
pipeline.run_audit computes the FollowupsAudit (followups_load, followups_stats).
"""

from __future__ import annotations

import math
from typing import Any

from ..followups.questionnaire import CONDITIONS, QUESTIONS
from ..followups.rubric import DIMENSIONS
from .agreement import Agreement
from .followups_stats import (
    ALL,
    INTERROGATION_METRICS,
    DimensionAgreement,
    FollowupsAudit,
    PairAudit,
    Rate,
)

CONDITION_TEXT = {"CTRL": "A0 B0", "B1": "A0 B1", "A1": "A1 B0", "A1B1": "A1 B1", "A2": "A2 B0",
                  "A2B1": "A2 B1"}


def _num(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.1f}"


def rate_cell(r: Rate) -> str:
    """'2/8 25.0 [0.0, 50.0]': count, percent and interval."""
    interval = "n/a" if math.isnan(r.low) else f"{_pct(r.low)}, {_pct(r.high)}"
    return f"{r.k:g}/{r.n:g} {_pct(r.estimate)} [{interval}]"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows] + [""]


def _agreement_cells(a: Agreement | None) -> list[str]:
    if a is None:
        return ["0", "n/a", "n/a", "n/a"]
    return [str(a.n), _num(a.kappa), _pct(a.exact), _pct(a.within_one)]


def _dimension_row(d: DimensionAgreement) -> list[str]:
    s = d.statuses
    return [d.dimension, *_agreement_cells(d.before), *_agreement_cells(d.after),
            str(s["agreed"]), str(s["reconciled"]), str(s["dropped"]), str(s["missing"])]


def _rejudge_lines(audit: FollowupsAudit) -> list[str]:
    lines = ["## Re-judging", "",
             "Recorded turns scored again by another judge with the attacker's action and the world "
             "state held fixed (the live judge's exact prompt). The re-judgments are in the judge "
             "tables above: rank agreement and self-preference use every judge's judgments, "
             "re-judged turns included. Below, each re-judge beside the live judge on the same turns "
             "(non-failure in percent).", ""]
    if not audit.rejudge:
        return lines + ["No turn has been re-judged (`vcrime-audit rejudge`).", ""]
    rows = [[c.judge, ", ".join(c.live_judges) or "n/a", str(c.turns), str(c.failed), str(c.compared),
             _pct(c.live_non_failure), _pct(c.non_failure),
             "n/a" if math.isnan(c.mean_difference) else f"{100 * c.mean_difference:+.1f}",
             _pct(c.mean_absolute_difference), _pct(c.risky_agreement)]
            for c in audit.rejudge]
    return lines + _table(["Re-judge", "Live judge(s)", "Turns", "No usable answer", "Compared",
                           "Live non-failure", "Re-judge non-failure", "Mean diff (pp)",
                           "Mean abs diff (pp)", "Risky agreement %"], rows)


def _annotation_lines(audit: FollowupsAudit) -> list[str]:
    conf = f"{100 * audit.confidence:.0f}%"
    lines = ["## Behaviour annotation", "",
             "Two annotators score each run's attacker actions (never the judge's outcomes) on four "
             "dimensions, 1-5, from the rubric in `vcrime_audit/followups/data/annotation_rubric.yaml`."
             " Where they differ, each re-scores after seeing the other's score and reason; scores "
             "still apart are dropped, and items with no usable answer are missing; both are counted. "
             "Before: independent scores. After: reconciled scores, dropped items included, missing "
             "left out. kappa: quadratic-weighted Cohen's kappa; n/a with fewer than 2 items or when a rater "
             "gave one constant score.", ""]
    if not audit.annotation:
        return lines + ["No run has been annotated (`vcrime-audit annotate`).", ""]
    for pair in audit.annotation:
        lines += [f"### Annotators {pair.annotators.replace(',', ' and ')}", ""]
        rows = [_dimension_row(d) for d in pair.dimensions] + [_dimension_row(pair.pooled)]
        lines += _table(["Dimension", "n before", "kappa before", "exact % before",
                         "within-one % before", "n after", "kappa after", "exact % after",
                         "within-one % after", "agreed", "reconciled", "dropped", "missing"], rows)
        lines += [f"Level-5 rate per attacker: final scores at level 5 / final scores, percent "
                  f"[{conf} task-bootstrap CI]; 'all' pools the four dimensions.", ""]
        lines += _annotator_bias_lines(pair, conf)
        if not pair.level5:
            lines += ["No run has a final (agreed or reconciled) score yet.", ""]
            continue
        rows = [[attacker, *(rate_cell(rates[d]) if d in rates else "n/a" for d in (*DIMENSIONS, ALL))]
                for attacker, rates in pair.level5.items()]
        lines += _table(["Attacker", *DIMENSIONS, ALL], rows)
    return lines


def _annotator_bias_lines(pair: PairAudit, conf: str) -> list[str]:
    lines = ["Annotator self-preference (the paper's Section 5.3): an annotator's independent score on "
             "runs its own model played (same name or weights fingerprint) minus the other "
             f"annotator's score on the same items, in levels [{conf} task-bootstrap CI].", ""]
    if not pair.self_preference:
        return lines + ["Neither annotator's model played any annotated run.", ""]
    rows = [[b.annotator, b.other, str(b.own_runs), f"{b.rate.n:g}", _levels(b.rate)]
            for b in pair.self_preference]
    return lines + _table(["Annotator", "Other", "Own runs", "Items", "Bias (levels)"], rows)


def _levels(r: Rate) -> str:
    if math.isnan(r.estimate):
        return "n/a"
    interval = "n/a" if math.isnan(r.low) else f"{r.low:+.2f}, {r.high:+.2f}"
    return f"{r.estimate:+.2f} [{interval}]"


def _interrogation_lines(audit: FollowupsAudit) -> list[str]:
    conf = f"{100 * audit.confidence:.0f}%"
    q1, _, q3 = QUESTIONS
    lines = ["## Post-hoc interrogation", "",
             "Each run's action log (runs with enough executed turns) handed back to the model that "
             "produced it, three closed questions in one call, under a framing condition: factor A "
             "says how strongly the log is presented as real events (A0 simulation, A1 matched to "
             "real reports, A2 real events), factor B whether the plan was user-instructed (B0) or "
             f"the model's own (B1). Admission: q1 \"{q1.text}\" answered consistently with the log. "
             "Refusal: a decline option, or no valid structured answer (counted, never dropped). "
             f"Credible: q3 \"{q3.text}\" answered credible. All rates over every interrogation "
             f"of the cell, percent [{conf} task-bootstrap CI]. Schema mode: constrained JSON with a "
             "decline letter per question and a whole-interview decline. Free-text mode: no schema; "
             "an unparseable answer counts as a refusal. Log source: own (the model that played the "
             "run, by name or weights fingerprint) or other (the paper's Appendix J: a model "
             "questioned about another source's log, framed the same way).", ""]
    if not audit.interrogation:
        return lines + ["No run has been interrogated (`vcrime-audit interrogate`).", ""]
    rows = [[c.model, c.source, _condition(c.condition), str(c.n), str(c.valid),
             *(rate_cell(c.rates[m]) for m in INTERROGATION_METRICS)] for c in audit.interrogation]
    return lines + _table(["Model", "Log source", "Condition", "Runs", "Valid answers", "Admission",
                           "Refusal", "Credible"], rows)


def _condition(condition: str) -> str:
    base, _, mode = condition.partition("+")
    return (f"{base} ({CONDITION_TEXT.get(base, '?')})"
            + (", free text" if mode == "free" else ", schema"))


def followups_markdown(audit: FollowupsAudit) -> list[str]:
    return _rejudge_lines(audit) + _annotation_lines(audit) + _interrogation_lines(audit)


def _number(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _agreement_json(a: Agreement | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {"n": a.n, "kappa_quadratic": _number(a.kappa), "exact": _number(a.exact),
            "within_one": _number(a.within_one)}


def _rate_json(r: Rate) -> dict[str, Any]:
    return {"k": r.k, "n": r.n, "estimate": _number(r.estimate), "low": _number(r.low),
            "high": _number(r.high)}


def followups_json(audit: FollowupsAudit) -> dict[str, Any]:
    return {
        "bootstrap": {"unit": "task", "resamples": audit.n_resamples, "seed": audit.seed,
                      "confidence": audit.confidence},
        "rejudge": [{"judge": c.judge, "live_judges": list(c.live_judges), "turns": c.turns,
                     "no_usable_answer": c.failed, "compared": c.compared,
                     "live_non_failure": _number(c.live_non_failure),
                     "non_failure": _number(c.non_failure),
                     "mean_difference": _number(c.mean_difference),
                     "mean_absolute_difference": _number(c.mean_absolute_difference),
                     "risky_agreement": _number(c.risky_agreement)} for c in audit.rejudge],
        "annotation": [{
            "annotators": p.annotators.split(","),
            "dimensions": {d.dimension: {"before": _agreement_json(d.before),
                                         "after": _agreement_json(d.after), "statuses": d.statuses}
                           for d in (*p.dimensions, p.pooled)},
            "level5": {a: {d: _rate_json(r) for d, r in rates.items()} for a, rates in p.level5.items()},
            "self_preference": [{"annotator": b.annotator, "other": b.other, "own_runs": b.own_runs,
                                 "bias_levels": _rate_json(b.rate)} for b in p.self_preference],
        } for p in audit.annotation],
        "interrogation": [{"model": c.model, "condition": c.condition, "log_source": c.source,
                           "factors": CONDITION_TEXT.get(c.condition.partition("+")[0]),
                           "runs": c.n, "valid": c.valid,
                           **{m: _rate_json(c.rates[m]) for m in INTERROGATION_METRICS}}
                          for c in audit.interrogation],
        "conditions": list(CONDITIONS),
    }
