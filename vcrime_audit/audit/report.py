"""The audit report folder: report.md, summary.json, lineage.json and figures/*.png.

Formatting only: every number comes from an AuditResult.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .followups_report import followups_markdown
from .judges import RELATIONS, JudgeAudit
from .metrics import PAIRWISE_METRICS, AttackerMetrics, Estimate
from .pipeline import AuditResult
from .summary import lineage, summary
from .synthetic import SYNTHETIC_NOTE

METRIC_NAMES = {"non_failure": "Turn non-failure (median across judges)",
                "catastrophic": "Catastrophic failure on risky turns (median across judges)",
                "over_harm": "Over-harm runs", "team_usage": "Team usage", "pass_at_1": "Pass@1"}


@dataclass(frozen=True)
class ReportFiles:
    folder: Path
    report: Path
    summary: Path
    lineage: Path
    figures: dict[str, Path]


def pct(x: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(x) else f"{100.0 * x:.{digits}f}"


def cell(e: Estimate) -> str:
    """'81.4 [80.6, 83.9]' in percent."""
    if math.isnan(e.estimate):
        return "n/a"
    return f"{pct(e.estimate)} [{pct(e.low)}, {pct(e.high)}]"


def signed_pp(e: Estimate) -> str:
    if math.isnan(e.estimate):
        return "n/a"
    return f"{100 * e.estimate:+.1f} [{100 * e.low:+.1f}, {100 * e.high:+.1f}]"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def codes(names: Sequence[str]) -> dict[str, str]:
    return {name: f"A{i + 1}" for i, name in enumerate(names)}


def _table1(m: AttackerMetrics) -> list[str]:
    header = ["Attacker", "Runs", "Turns", "Non-failure %", "Catastrophic on risky %", "Over-harm %",
              "Lethal/catastrophic runs", "Team usage %", "Pass@1 %"]
    rows = [[a, m.n_runs[a], m.n_turns[a], cell(m.non_failure_median[a]), cell(m.catastrophic_median[a]),
             cell(m.over_harm[a]), f"{m.extreme_harm[a].numerator:.0f} / {m.n_runs[a]}",
             cell(m.team_usage[a]), cell(m.pass_at_1[a])] for a in m.attackers]
    return table(header, rows)


def _per_judge(m: AttackerMetrics, per_judge: dict[str, dict[str, Estimate]],
               median: dict[str, Estimate]) -> list[str]:
    header = ["Attacker", *m.judges, "median"]
    rows = [[a, *(cell(per_judge[j][a]) for j in m.judges), cell(median[a])] for a in m.attackers]
    return table(header, rows)


def _pair_matrix(m: AttackerMetrics, metric: str) -> list[str]:
    short = codes(m.attackers)
    diff = {}
    for p in m.pairwise[metric]:
        if math.isnan(p.estimate):
            diff[(p.first, p.second)] = diff[(p.second, p.first)] = "n/a"
            continue
        mark = "*" if p.significant else ""
        diff[(p.first, p.second)] = f"{100 * p.estimate:+.1f}{mark}"
        diff[(p.second, p.first)] = f"{-100 * p.estimate:+.1f}{mark}"
    rows = [[f"{short[a]} {a}", *(diff.get((a, b), "") for b in m.attackers)] for a in m.attackers]
    return table(["row - column (pp)", *(short[b] for b in m.attackers)], rows)


def _task_table(m: AttackerMetrics) -> list[str]:
    short = codes(m.attackers)
    rows = []
    for task, cells in m.task_attacker.items():
        rows.append([task, *(f"{cells[a].over_harm}/{len(cells[a].runs)}" if a in cells else ""
                             for a in m.attackers)])
    return table(["Task", *(short[a] for a in m.attackers)], rows)


def _judge_sections(audit: JudgeAudit) -> list[str]:
    lines = ["## Judge rank agreement", ""]
    if audit.note and not audit.agreement:
        return lines + [f"Not computed: {audit.note}.", "", "## Self-preference bias", "",
                        f"Not computed: {audit.note}.", ""]
    lines += [f"On the {audit.common_turns} attacker turns every judge scored, each judge's rates "
              "rank the attackers (1 = highest); the tables give Spearman's rho between judges. "
              "Catastrophic failure uses each judge's own risky turns among them.", ""]
    if audit.note:
        lines += [f"Note: {audit.note}.", ""]
    for metric, ra in audit.agreement.items():
        lines += [f"### {METRIC_NAMES[metric].split(' (')[0]}", ""]
        rho = {(p.first, p.second): p.rho for p in ra.pairs}
        rows = []
        for a in audit.judges:
            row = [a]
            for b in audit.judges:
                value = 1.0 if a == b else rho.get((a, b), rho.get((b, a), math.nan))
                row.append("n/a" if math.isnan(value) else f"{value:.2f}")
            rows.append(row)
        lines += table(["rho", *audit.judges], rows)
    lines += ["## Self-preference bias", "",
              "A judge's non-failure rate on an attacker minus the median of the other judges on the "
              "same turns, in percentage points, grouped by how the judge relates to the attacker.", ""]
    rows = [[name, g.n_pairs, signed_pp(g.mean), f"{100 * g.minimum:+.1f} ... {100 * g.maximum:+.1f}"]
            for name in RELATIONS if (g := audit.groups.get(name))]
    lines += table(["Relation", "Pairs", "Mean bias pp [95% CI]", "Range pp"], rows)
    rows = [[b.judge, b.attacker, b.relation, signed_pp(b.estimate)] for b in audit.biases]
    lines += table(["Judge", "Attacker", "Relation", "Bias pp [95% CI]"], rows)
    return lines


def other_sections(db: Path) -> list[str]:
    """Sections from the other workflows that write to the same store (markdown, one each)."""
    from ..certify.report import certification_section
    from ..certify.store import load_certification_rows
    from ..determinism import determinism_section

    return [certification_section(load_certification_rows(db)), "", *determinism_section(db)]


def markdown(result: AuditResult, figures: dict[str, Path], folder: Path) -> str:
    m, data = result.metrics, result.data
    conf = f"{100 * m.confidence:.0f}%"
    lines = [f"# {'SYNTHETIC - ' if data.synthetic else ''}vcrime-audit report", ""]
    if data.synthetic:
        lines += [f"> **SYNTHETIC DATA.** {SYNTHETIC_NOTE}.", ""]
    lines += [
        f"- Store: `{data.source}`",
        f"- Runs: {len(data.runs)} finished ({data.unfinished_runs} unfinished left out), "
        f"{len(data.turns)} attacker turns, {len(data.judgments)} judgments, judges: "
        f"{', '.join(m.judges) or 'none'}",
        f"- Intervals: {conf} percentile bootstrap over {len(m.tasks)} tasks (runs of a task stay "
        f"together), {m.n_resamples} resamples, seed {m.seed}",
        f"- Over-harm lexicon digest: `{data.lexicon_digest}` ({data.reclassified_turns} turns "
        "classified during this audit)",
        "- Every number is in `summary.json`; its `lineage` key leads to the run and turn ids in "
        "`lineage.json`.", "",
        "## Table 1", "",
        f"Value [{conf} CI] in percent. Non-failure and catastrophic failure: median across judges.", ""]
    lines += _table1(m)
    lines += ["### Turn non-failure rate by judge", ""] + _per_judge(m, m.non_failure, m.non_failure_median)
    lines += ["### Catastrophic failure on risky turns by judge", ""]
    lines += _per_judge(m, m.catastrophic, m.catastrophic_median)
    lines += [f"![judges]({figures['judges'].relative_to(folder).as_posix()})", "",
              "## Pairwise differences", "",
              f"Row minus column in percentage points; * marks a difference whose {conf} paired bootstrap "
              "interval excludes 0.", ""]
    for metric in PAIRWISE_METRICS:
        lines += [f"### {METRIC_NAMES[metric]}", ""] + _pair_matrix(m, metric)
    rho = m.harm_vs_success
    lines += ["## Over-harm", "",
              "A run is over-harm when its highest force or damage level (keyword classifier over the "
              "attacker's own action fields) is above what its goal allows. Spearman rho between "
              f"over-harm and non-failure across attackers: {'n/a' if math.isnan(rho) else f'{rho:.2f}'}.",
              "", f"![scatter]({figures['scatter'].relative_to(folder).as_posix()})", "",
              "### Over-harm runs by task and attacker", ""]
    lines += _task_table(m)
    lines += [f"![heat map]({figures['heatmap'].relative_to(folder).as_posix()})", ""]
    lines += _judge_sections(result.judges)
    if result.followups is not None:
        lines += followups_markdown(result.followups)
    lines += [section for section in other_sections(Path(data.source))]
    lines += ["## Attacker codes", ""] + [f"- {c}: {a}" for a, c in codes(m.attackers).items()] + [""]
    return "\n".join(lines)


def write_report(result: AuditResult, folder: str | Path) -> ReportFiles:
    from .figures import draw_all

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    figures = draw_all(result.metrics, folder / "figures", result.data.synthetic)
    report = folder / "report.md"
    report.write_text(markdown(result, figures, folder), encoding="utf-8")
    summary_path = folder / "summary.json"
    summary_path.write_text(json.dumps(summary(result), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    lineage_path = folder / "lineage.json"
    lineage_path.write_text(json.dumps(lineage(result), separators=(",", ":"), allow_nan=False) + "\n",
                            encoding="utf-8")
    return ReportFiles(folder, report, summary_path, lineage_path, figures)
