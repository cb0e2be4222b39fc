"""The audit's figures, as SVG (:mod:`svg`): judge spread, over-harm against non-failure, and
over-harm by task and attacker. Each mark has a tooltip with its exact value."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path

from .breakdown import TaskCell
from .estimates import Estimate
from .metrics import AttackerMetrics
from .svg import MARKERS, PALETTE, REDS, Axis, Canvas, percent_axis, reds, text_width, tick_label

JUDGES_FIGURE = "judges_non_failure_catastrophic.svg"
SCATTER_FIGURE = "over_harm_vs_non_failure.svg"
HEATMAP_FIGURE = "over_harm_task_attacker.svg"

GRID = "#e5e5e5"
EMPTY_CELL = "#eeeeee"
TITLE_SIZE = 13.0
LABEL_SIZE = 10.0
TICK_SIZE = 9.0


def _title(text: str, synthetic: bool) -> str:
    return f"SYNTHETIC DATA - {text}" if synthetic else text


def _pct(x: float) -> float:
    return 100.0 * x


def _interval(e: Estimate) -> str:
    if math.isnan(e.estimate):
        return "undefined"
    return f"{_pct(e.estimate):.1f} % (interval {_pct(e.low):.1f}-{_pct(e.high):.1f})"


def _reach(estimates: Iterable[Estimate]) -> list[float]:
    """The values an axis must hold to show these estimates and their intervals, in %."""
    return [_pct(v) for e in estimates for v in (e.estimate, e.high)]


def _x_axis(c: Canvas, axis: Axis, top: float, bottom: float, label: str) -> None:
    """Vertical grid lines, tick labels under ``bottom`` and the axis label under them."""
    with c.group("x-axis"):
        for tick in axis.ticks:
            with c.group("tick"):
                c.line(axis(tick), top, axis(tick), bottom, stroke=GRID)
                c.line(axis(tick), bottom, axis(tick), bottom + 4)
                c.text(axis(tick), bottom + 15, tick_label(tick), TICK_SIZE, anchor="middle")
        c.text((axis.start + axis.end) / 2, bottom + 32, label, LABEL_SIZE, anchor="middle")


def _y_axis(c: Canvas, axis: Axis, left: float, right: float, label: str) -> None:
    """Horizontal grid lines, tick labels left of ``left`` and the axis label, turned, left of them."""
    with c.group("y-axis"):
        for tick in axis.ticks:
            with c.group("tick"):
                c.line(left, axis(tick), right, axis(tick), stroke=GRID)
                c.line(left - 4, axis(tick), left, axis(tick))
                c.text(left - 7, axis(tick), tick_label(tick), TICK_SIZE, anchor="end", middle=True)
        c.text(left - 36, (axis.start + axis.end) / 2, label, LABEL_SIZE, anchor="middle", rotate=-90.0)


def _frame(c: Canvas, left: float, top: float, right: float, bottom: float) -> None:
    c.rect(left, top, right - left, bottom - top, fill="none", stroke="#000000")


def _judges_panel(c: Canvas, m: AttackerMetrics, per_judge: dict[str, dict[str, Estimate]],
                  median: dict[str, Estimate], label: str, x0: float, panel_w: float, top: float,
                  bottom: float, row_h: float) -> None:
    rows = m.attackers
    estimates = [per_judge[j][a] for j in m.judges for a in rows] + [median[a] for a in rows]
    axis = percent_axis(_reach(estimates), x0 + 8.0, x0 + panel_w - 8.0)
    _x_axis(c, axis, top, bottom, label)
    _frame(c, x0, top, x0 + panel_w, bottom)
    if not any(math.isfinite(e.estimate) for e in estimates):
        c.text(x0 + panel_w / 2, (top + bottom) / 2, "no value", LABEL_SIZE, anchor="middle",
               fill="#777777", middle=True)
    with c.group("marks"):
        for i, a in enumerate(rows):
            y = top + 6.0 + row_h * (i + 0.5)
            for k, judge in enumerate(m.judges):
                e = per_judge[judge][a]
                if math.isfinite(e.estimate):
                    c.marker(MARKERS[k % len(MARKERS)], axis(_pct(e.estimate)), y, 4.5,
                             PALETTE[k % len(PALETTE)], tip=f"{a}, judged by {judge}: {_interval(e)}")
            if math.isfinite(median[a].estimate):
                x = axis(_pct(median[a].estimate))
                c.line(x, y - 9.0, x, y + 9.0, width=2.5,
                       tip=f"{a}, median across judges: {_interval(median[a])}")


def judges_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Per-judge markers and the median tick per attacker, for non-failure and catastrophic failure."""
    rows = list(m.attackers)
    title = _title("judge spread per attacker", synthetic)
    legend = [*m.judges, "median across judges"]
    row_h, panel_w, gap = 26.0, 320.0, 36.0
    left = 16.0 + max((text_width(a, LABEL_SIZE) for a in rows), default=0.0) + 10.0
    top = 44.0
    bottom = top + row_h * len(rows) + 12.0
    legend_x = left + 2 * panel_w + gap + 18.0
    width = max(legend_x + 22.0 + max(text_width(j, TICK_SIZE) for j in legend) + 12.0,
                text_width(title, TITLE_SIZE) + 32.0)
    c = Canvas(width, max(bottom + 48.0, top + 16.0 * len(legend) + 8.0), title)
    c.text(width / 2, 24.0, title, TITLE_SIZE, anchor="middle")
    panels = ((m.non_failure, m.non_failure_median, "Turn non-failure rate (%)"),
              (m.catastrophic, m.catastrophic_median, "Catastrophic failure on risky turns (%)"))
    for p, (per_judge, median, label) in enumerate(panels):
        with c.group("panel"):
            _judges_panel(c, m, per_judge, median, label, left + p * (panel_w + gap), panel_w, top, bottom,
                          row_h)
    for i, a in enumerate(rows):
        c.text(left - 8.0, top + 6.0 + row_h * (i + 0.5), a, LABEL_SIZE, anchor="end", middle=True)
    for k, name in enumerate(legend):
        y = top + 8.0 + 16.0 * k
        if k < len(m.judges):
            c.marker(MARKERS[k % len(MARKERS)], legend_x + 6.0, y, 4.5, PALETTE[k % len(PALETTE)])
        else:
            c.line(legend_x + 6.0, y - 7.0, legend_x + 6.0, y + 7.0, width=2.5)
        c.text(legend_x + 20.0, y, name, TICK_SIZE, middle=True)
    path.write_text(c.markup(), encoding="utf-8")
    return path


def _error_bar(c: Canvas, x1: float, y1: float, x2: float, y2: float, colour: str) -> None:
    """A bar from (x1, y1) to (x2, y2), horizontal or vertical, with a 6-pixel cap at each end."""
    cap_x, cap_y = (0.0, 3.0) if y1 == y2 else (3.0, 0.0)
    c.line(x1, y1, x2, y2, stroke=colour, width=1.2)
    for x, y in ((x1, y1), (x2, y2)):
        c.line(x - cap_x, y - cap_y, x + cap_x, y + cap_y, stroke=colour, width=1.2)


def scatter_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Over-harm against median non-failure per attacker, with intervals and Spearman's rho."""
    rho = m.harm_vs_success
    rho_text = "undefined (fewer than 2 attackers)" if math.isnan(rho) else f"{rho:.2f}"
    title = _title(f"over-harm vs non-failure, Spearman rho = {rho_text}", synthetic)
    shown = [a for a in m.attackers
             if math.isfinite(m.non_failure_median[a].estimate) and math.isfinite(m.over_harm[a].estimate)]
    left, top, plot = 64.0, 40.0, 400.0
    right, bottom = left + plot, top + plot * 0.75
    width = max(right + max((text_width(a, TICK_SIZE) for a in shown), default=0.0) + 8.0,
                text_width(title, LABEL_SIZE + 1) + 32.0)
    hidden = [a for a in m.attackers if a not in shown]
    note = f"not plotted (no value): {', '.join(hidden)}" if hidden else ""
    width = max(width, text_width(note, TICK_SIZE) + 32.0)
    c = Canvas(width, bottom + 50.0 + (16.0 if note else 0.0), title)
    c.text(width / 2, 22.0, title, LABEL_SIZE + 1, anchor="middle")
    x_axis = percent_axis(_reach(m.non_failure_median[a] for a in shown), left + 10.0, right - 10.0)
    y_axis = percent_axis(_reach(m.over_harm[a] for a in shown), bottom - 10.0, top + 10.0)
    _x_axis(c, x_axis, top, bottom, "Turn non-failure rate, median across judges (%)")
    _y_axis(c, y_axis, left, right, "Over-harm runs (%)")
    _frame(c, left, top, right, bottom)
    with c.group("marks"):
        for k, a in enumerate(m.attackers):
            if a not in shown:
                continue
            nf, oh, colour = m.non_failure_median[a], m.over_harm[a], PALETTE[k % len(PALETTE)]
            x, y = x_axis(_pct(nf.estimate)), y_axis(_pct(oh.estimate))
            if math.isfinite(nf.low) and math.isfinite(nf.high):
                _error_bar(c, x_axis(_pct(nf.low)), y, x_axis(_pct(nf.high)), y, colour)
            if math.isfinite(oh.low) and math.isfinite(oh.high):
                _error_bar(c, x, y_axis(_pct(oh.low)), x, y_axis(_pct(oh.high)), colour)
            c.marker("circle", x, y, 4.0, colour,
                     tip=f"{a}: non-failure {_interval(nf)}; over-harm {_interval(oh)}")
            c.text(x + 6.0, y - 5.0, a, TICK_SIZE)
    if note:
        c.text(16.0, bottom + 58.0, note, TICK_SIZE, fill="#555555")
    path.write_text(c.markup(), encoding="utf-8")
    return path


def _heatmap_cell(c: Canvas, task: str, attacker: str, cell: TaskCell | None, x: float, y: float,
                  width: float, height: float) -> None:
    """One task and attacker: coloured by its share of over-harm runs, which it also prints."""
    if cell is None or not cell.runs:
        c.rect(x, y, width, height, EMPTY_CELL, stroke="#ffffff", tip=f"{task} / {attacker}: no runs")
        return
    share = _pct(cell.rate)
    c.rect(x, y, width, height, reds(share / 100.0), stroke="#ffffff",
           tip=f"{task} / {attacker}: {cell.over_harm} of {len(cell.runs)} runs over-harm ({share:.1f} %)")
    c.text(x + width / 2, y + height / 2, f"{share:.0f}", 8.0, anchor="middle", middle=True,
           fill="#ffffff" if share >= 60.0 else "#222222")


def heatmap_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Share of over-harm runs per task (rows) and attacker (columns), with a colour bar."""
    tasks, attackers = list(m.task_attacker), list(m.attackers)
    title = _title("over-harm by task and attacker", synthetic)
    cell_w, cell_h, top = 56.0, 18.0, 44.0
    col_reach = max((text_width(a, TICK_SIZE) * math.sqrt(0.5) for a in attackers), default=0.0)
    left = 16.0 + max((text_width(t, TICK_SIZE) for t in tasks), default=0.0) + 8.0
    left = max(left, col_reach - cell_w / 2 + 16.0)
    grid_right, grid_bottom = left + cell_w * len(attackers), top + cell_h * len(tasks)
    bar_x, bar_h = grid_right + 24.0, max(cell_h * len(tasks), 120.0)
    has_empty = any(not getattr(m.task_attacker[t].get(a), "runs", ()) for t in tasks for a in attackers)
    width = max(bar_x + 14.0 + 32.0 + 20.0, text_width(title, LABEL_SIZE + 1) + 32.0)
    height = max(grid_bottom + 14.0 + col_reach + 12.0, top + bar_h + (40.0 if has_empty else 16.0))
    c = Canvas(width, height, title)
    c.text(width / 2, 24.0, title, LABEL_SIZE + 1, anchor="middle")
    with c.group("cells"):
        for i, task in enumerate(tasks):
            for j, a in enumerate(attackers):
                _heatmap_cell(c, task, a, m.task_attacker[task].get(a), left + cell_w * j, top + cell_h * i,
                              cell_w, cell_h)
    for i, task in enumerate(tasks):
        c.text(left - 6.0, top + cell_h * (i + 0.5), task, TICK_SIZE, anchor="end", middle=True)
    for j, a in enumerate(attackers):
        c.text(left + cell_w * (j + 0.5), grid_bottom + 12.0, a, TICK_SIZE, anchor="end", rotate=-45.0)
    with c.group("colour-bar"):
        bar = Axis(0.0, 100.0, top + bar_h, top, 20.0)
        c.rect(bar_x, top, 14.0, bar_h, c.vertical_gradient("reds", REDS), stroke="#000000")
        for tick in bar.ticks:
            c.line(bar_x + 14.0, bar(tick), bar_x + 18.0, bar(tick))
            c.text(bar_x + 21.0, bar(tick), tick_label(tick), TICK_SIZE, middle=True)
        c.text(bar_x + 56.0, top + bar_h / 2, "over-harm runs (%)", TICK_SIZE, anchor="middle", rotate=90.0)
        if has_empty:
            c.rect(bar_x, top + bar_h + 14.0, 14.0, 10.0, EMPTY_CELL, stroke="#000000")
            c.text(bar_x + 21.0, top + bar_h + 19.0, "no runs", TICK_SIZE, middle=True)
    path.write_text(c.markup(), encoding="utf-8")
    return path


FIGURES: dict[str, tuple[Callable[[AttackerMetrics, Path, bool], Path], str]] = {
    "judges": (judges_figure, JUDGES_FIGURE), "scatter": (scatter_figure, SCATTER_FIGURE),
    "heatmap": (heatmap_figure, HEATMAP_FIGURE)}


def draw_all(m: AttackerMetrics, folder: Path, synthetic: bool) -> dict[str, Path]:
    """Every figure, written into ``folder``; name -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    return {name: draw(m, folder / file, synthetic) for name, (draw, file) in FIGURES.items()}
