"""The audit report folder: report.md, summary.json, lineage.json and figures/*.svg.

Formatting only: every number comes from an AuditResult.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .breakdown import EXCESS_LEVELS
from .caveats import audit_warnings
from .estimates import HOLM, Estimate
from .figures import draw_all
from .followups_report import followups_markdown
from .judges import RELATIONS, JudgeAudit
from .metrics import PAIRWISE_METRICS, AttackerMetrics
from .other_sections import other_sections, other_sections_lines
from .pipeline import AuditResult
from .staging import move_in, staging_folder
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
    """'81.4 [80.6, 83.9]' in percent; 'x [n/a]' when the interval is undefined."""
    if math.isnan(e.estimate):
        return "n/a"
    if math.isnan(e.low):
        return f"{pct(e.estimate)} [n/a]"
    return f"{pct(e.estimate)} [{pct(e.low)}, {pct(e.high)}]"


def median_cell(e: Estimate, n_judges: int) -> str:
    """A median across judges with the number of judges it rests on when fewer than all."""
    text = cell(e)
    if e.n_parts is not None and e.n_parts < n_judges and not math.isnan(e.estimate):
        text += f" ({e.n_parts}/{n_judges} judges)"
    return text


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
    header = ["Attacker", "Main runs", "Main-run turns", "Non-failure %", "Catastrophic on risky %",
              "Over-harm %", "Lethal/catastrophic / over-harm runs", "Team usage %", "Pass@1 %"]
    j = len(m.judges)
    rows = [[a, m.n_runs[a], m.n_turns[a], median_cell(m.non_failure_median[a], j),
             median_cell(m.catastrophic_median[a], j), cell(m.over_harm[a]),
             f"{m.extreme_harm[a].numerator or 0:.0f} / {m.over_harm_runs.get(a, 0)}",
             cell(m.team_usage[a]), cell(m.pass_at_1[a])] for a in m.attackers]
    total_over = sum(m.over_harm_runs.values())
    total_extreme = sum(m.extreme_harm[a].numerator or 0 for a in m.attackers)
    return table(header, rows) + [
        f"All attackers: {total_over} over-harm runs of {sum(m.n_runs.values())} main runs, "
        f"{total_extreme:.0f} of them lethal or catastrophic.", ""]


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
        mark = ("*" if p.significant else "") + ("†" if p.significant_holm(1 - m.confidence) else "")
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


def _task_breakdown(m: AttackerMetrics) -> list[str]:
    short = codes(m.attackers)
    rows = [[task, b.runs, b.wins, *(b.wins_by_attacker.get(a, "") for a in m.attackers), b.over_harm,
             *(b.levels[x] for x in EXCESS_LEVELS)] for task, b in m.task_breakdown.items()]
    lines = table(["Task", "Runs", "Wins", *(f"wins {short[a]}" for a in m.attackers), "Over-harm runs",
                   *EXCESS_LEVELS], rows)
    pb = m.pair_breakdown
    if pb is not None:
        counts = ", ".join(f"{n} with {k}" for k, n in pb.by_count.items())
        flagged = sum(pb.highest.values())
        lines += [f"Attacker-task pairs: {pb.pairs} ({counts} over-harm runs). Of the {flagged} "
                  "pairs with any, highest excess level: " + ", ".join(
                      f"{x} {pb.highest[x]}" for x in EXCESS_LEVELS)
                  + f". Runs over on both axes (counted as force): {pb.both_axes_runs}. Tasks with "
                  f"no over-harm run: {pb.tasks_without_over_harm} of {len(m.task_breakdown)}.", ""]
    return lines


def _judge_sections(audit: JudgeAudit) -> list[str]:
    lines = ["## Judge rank agreement", ""]
    if audit.note and not audit.agreement:
        return lines + [f"Not computed: {audit.note}.", "", "## Self-preference bias", "",
                        f"Not computed: {audit.note}.", ""]
    lines += ["Each judge's rates rank the attackers (1 = highest); the tables give Spearman's rho "
              "between judges over the attackers both rated. Bases as in the paper: non-failure on "
              "the turns every judge scored; catastrophic failure on each judge's full set of judged "
              "turns, its risky ones.", ""]
    if audit.note:
        lines += [f"Note: {audit.note}.", ""]
    for metric, ra in audit.agreement.items():
        lines += [f"### {METRIC_NAMES[metric].split(' (')[0]}", "", f"Basis: {ra.basis}.", ""]
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
              "Raw bias (the paper's): a judge's non-failure rate on an attacker minus the median of "
              "the other judges on the same turns, in percentage points. Adjusted bias: raw minus the "
              "judge's mean raw bias on cross-vendor attackers (its general leniency), so a lenient "
              "judge does not look self-preferring. Same model: the same registry name or the same "
              "weights fingerprint.", ""]
    rows = [[name, g.n_pairs, signed_pp(g.mean), _range(g.minimum, g.maximum),
             signed_pp(g.adjusted) if g.adjusted else "n/a",
             _range(g.adjusted_minimum, g.adjusted_maximum)]
            for name in RELATIONS if (g := audit.groups.get(name))]
    lines += table(["Relation", "Pairs", "Mean raw bias pp [95% CI]", "Raw range pp",
                    "Mean adjusted bias pp [95% CI]", "Adjusted range pp"], rows)
    lines += ["Per judge: its raw biases over the attackers and its leniency (mean cross-vendor bias).", ""]
    rows = [[s.judge, s.n, _pp(s.mean), _range(s.minimum, s.maximum), _pp(s.leniency)]
            for s in audit.spreads.values()]
    lines += table(["Judge", "Attackers", "Mean raw bias pp", "Range pp", "Leniency pp"], rows)
    rows = [[b.judge, b.attacker, b.relation, signed_pp(b.estimate),
             signed_pp(b.adjusted) if b.adjusted else "n/a"] for b in audit.biases]
    lines += table(["Judge", "Attacker", "Relation", "Raw bias pp [95% CI]", "Adjusted bias pp [95% CI]"],
                   rows)
    return lines


def _pp(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:+.1f}"


def _range(low: float, high: float) -> str:
    return "n/a" if math.isnan(low) else f"{100 * low:+.1f} ... {100 * high:+.1f}"


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
        f"- Primary judge: {m.primary.name or '(none)'} ({m.primary.chosen_by}; live judge of "
        f"{m.primary.runs} of {m.primary.total_runs} runs). Over-harm, lethal/catastrophic, team "
        "usage and Pass@1 use its runs (the main runs); non-failure and catastrophic failure use "
        "every turn each judge scored, live or re-judged.",
        "- Every number is in `summary.json`; its `lineage` key leads to the run and turn ids in "
        "`lineage.json`.", "",
        "## Table 1", "",
        f"Value [{conf} CI] in percent. Non-failure and catastrophic failure: median across judges "
        "(with the number of judges when fewer than all had a value). Lethal/catastrophic runs are "
        "over-harm runs whose excess reaches lethal force or catastrophic damage.", ""]
    lines += _table1(m)
    lines += ["### Turn non-failure rate by judge", ""] + _per_judge(m, m.non_failure, m.non_failure_median)
    lines += ["### Catastrophic failure on risky turns by judge", ""]
    lines += _per_judge(m, m.catastrophic, m.catastrophic_median)
    warnings = audit_warnings(result)
    lines += ["### Warnings", ""] + ([f"- {w}" for w in warnings] or ["None."]) + [""]
    lines += [f"![judges]({figures['judges'].relative_to(folder).as_posix()})", "",
              "## Pairwise differences", "",
              f"Row minus column in percentage points; * marks a difference whose {conf} paired bootstrap "
              f"interval excludes 0 (no correction); † marks one still significant at "
              f"{100 * (1 - m.confidence):.0f}% after the {HOLM} ({m.n_tests} tests; p-values from the "
              "paired bootstrap, two-sided, in `summary.json`).", ""]
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
    lines += ["### Tasks: wins and over-harm by highest excess level", "",
              "Main runs per task: wins (all attackers, then per attacker, as in the paper's Figure 12) "
              "and over-harm runs by their highest excess level. A run over on both axes counts as "
              "force (lethal when its force is lethal).", ""]
    lines += _task_breakdown(m)
    lines += [f"![heat map]({figures['heatmap'].relative_to(folder).as_posix()})", ""]
    lines += _judge_sections(result.judges)
    if result.followups is not None:
        lines += followups_markdown(result.followups)
    lines += other_sections_lines(result.other) if result.other is not None else \
        other_sections(Path(data.source))
    lines += ["## Attacker codes", ""] + [f"- {c}: {a}" for a, c in codes(m.attackers).items()] + [""]
    return "\n".join(lines)


def write_report(result: AuditResult, folder: str | Path) -> ReportFiles:
    """report.md, summary.json, lineage.json and the figures (SVG, :mod:`figures`), replaced as a
    set (:mod:`staging`): an audit killed meanwhile leaves the previous report whole, the new one
    whole, or, killed while the files move, no report.md and no summary.json; never a file cut
    short, nor a report.md or summary.json beside figures or lineage of another audit."""
    folder = Path(folder)
    with staging_folder(folder) as staging:
        drawn = draw_all(result.metrics, staging / "figures", result.data.synthetic)
        figures = {name: folder / path.relative_to(staging) for name, path in drawn.items()}
        (staging / "report.md").write_text(markdown(result, figures, folder), encoding="utf-8")
        (staging / "summary.json").write_text(json.dumps(summary(result), indent=1, allow_nan=False) + "\n",
                                              encoding="utf-8")
        (staging / "lineage.json").write_text(
            json.dumps(lineage(result), separators=(",", ":"), allow_nan=False) + "\n", encoding="utf-8")
        move_in(staging, folder, [*(path.relative_to(staging).as_posix() for path in drawn.values()),
                                  "lineage.json"], last=["summary.json", "report.md"])
    return ReportFiles(folder, folder / "report.md", folder / "summary.json", folder / "lineage.json",
                       figures)
