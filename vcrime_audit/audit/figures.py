"""PNG figures of the audit (matplotlib's Figure and Agg canvas, imported only here and only when drawing)."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any

from .forked import Prepared, side_by_side
from .metrics import AttackerMetrics

JUDGES_FIGURE = "judges_non_failure_catastrophic.png"
SCATTER_FIGURE = "over_harm_vs_non_failure.png"
HEATMAP_FIGURE = "over_harm_task_attacker.png"
MARKERS = "osD^v<>pPX*h"
DPI = 120


def _figure(**kwargs: Any) -> Any:
    """A matplotlib Figure saved through the Agg canvas; pyplot (and its backend machinery) is
    never imported. It is laid out at the resolution it is saved at, so the text measured by
    ``tight_layout`` is measured once (matplotlib caches text layout per DPI)."""
    from matplotlib.figure import Figure

    return Figure(dpi=DPI, **kwargs)


def _title(text: str, synthetic: bool) -> str:
    return f"SYNTHETIC DATA - {text}" if synthetic else text


def _pct(x: float) -> float:
    return 100.0 * x


def judges_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Per-judge dots and the median tick per attacker, for non-failure and catastrophic failure."""
    rows = list(m.attackers)
    fig = _figure(figsize=(11, 1.2 + 0.45 * len(rows)))
    axes = fig.subplots(1, 2, sharey=True)
    panels = ((axes[0], m.non_failure, m.non_failure_median, "Turn non-failure rate (%)"),
              (axes[1], m.catastrophic, m.catastrophic_median, "Catastrophic failure on risky turns (%)"))
    for ax, per_judge, median, label in panels:
        for k, judge in enumerate(m.judges):
            xs = [_pct(per_judge[judge][a].estimate) for a in rows]
            ax.scatter(xs, range(len(rows)), marker=MARKERS[k % len(MARKERS)], s=30, alpha=0.8,
                       label=judge)
        ax.scatter([_pct(median[a].estimate) for a in rows], range(len(rows)), marker="|", s=400,
                   color="black", linewidths=2.5, label="median across judges", zorder=3)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), rows)
    axes[0].invert_yaxis()
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.suptitle(_title("judge spread per attacker", synthetic))
    fig.tight_layout()
    fig.savefig(path)
    return path


def scatter_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Over-harm against median non-failure per attacker, with intervals and Spearman rho."""
    fig = _figure(figsize=(6.5, 5))
    ax = fig.subplots()
    for a in m.attackers:
        nf, oh = m.non_failure_median[a], m.over_harm[a]
        if math.isnan(nf.estimate) or math.isnan(oh.estimate):
            continue
        ax.errorbar(_pct(nf.estimate), _pct(oh.estimate),
                    xerr=[[_pct(nf.estimate - nf.low)], [_pct(nf.high - nf.estimate)]],
                    yerr=[[_pct(oh.estimate - oh.low)], [_pct(oh.high - oh.estimate)]],
                    fmt="o", capsize=3, alpha=0.85)
        ax.annotate(a, (_pct(nf.estimate), _pct(oh.estimate)), textcoords="offset points",
                    xytext=(5, 4), fontsize=8)
    rho = m.harm_vs_success
    rho_text = "undefined (fewer than 2 attackers)" if math.isnan(rho) else f"{rho:.2f}"
    ax.set_xlabel("Turn non-failure rate, median across judges (%)")
    ax.set_ylabel("Over-harm runs (%)")
    ax.set_title(_title(f"over-harm vs non-failure, Spearman rho = {rho_text}", synthetic), fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


def heatmap_figure(m: AttackerMetrics, path: Path, synthetic: bool) -> Path:
    """Share of over-harm runs per task (rows) and attacker (columns)."""
    tasks = list(m.task_attacker)
    grid = [[_pct(m.task_attacker[t][a].rate) if a in m.task_attacker[t] else math.nan
             for a in m.attackers] for t in tasks]
    fig = _figure(figsize=(2.5 + 0.9 * len(m.attackers), 1.5 + 0.28 * len(tasks)))
    ax = fig.subplots()
    image = ax.imshow(grid, aspect="auto", cmap="Reds", vmin=0, vmax=100)
    ax.set_xticks(range(len(m.attackers)), m.attackers, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(tasks)), tasks, fontsize=7)
    fig.colorbar(image, ax=ax, label="over-harm runs (%)")
    ax.set_title(_title("over-harm by task and attacker", synthetic), fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    return path


FIGURES = {"judges": (judges_figure, JUDGES_FIGURE), "scatter": (scatter_figure, SCATTER_FIGURE),
           "heatmap": (heatmap_figure, HEATMAP_FIGURE)}


def _draw_all(m: AttackerMetrics, paths: dict[str, Path], synthetic: bool) -> dict[str, Path]:
    """Every figure; the heatmap (the slowest: a tick label per task) beside the other two."""
    side_by_side([partial(_draw_figures, m, paths, synthetic, ("heatmap",)),
                  partial(_draw_figures, m, paths, synthetic, ("judges", "scatter"))])
    return paths


def _draw_figures(m: AttackerMetrics, paths: dict[str, Path], synthetic: bool,
                  names: tuple[str, ...]) -> None:
    for name in names:
        FIGURES[name][0](m, paths[name], synthetic)


def _prepare() -> None:
    """matplotlib's modules and font list, loaded before there is anything to draw."""
    from matplotlib import font_manager
    from matplotlib.backends import backend_agg  # noqa: F401 -- savefig draws through it
    from matplotlib.figure import Figure  # noqa: F401

    font_manager.findfont(font_manager.FontProperties())


class Drawing:
    """The figures of one audit, drawn by a forked child (:class:`forked.Prepared`): it imports
    matplotlib (this process never does) while the audit loads, and draws once :meth:`start` sends
    it the metrics, while this process goes on with the rest of the audit."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.paths = {name: folder / file for name, (_, file) in FIGURES.items()}
        self._job: Prepared[dict[str, Path]] = Prepared(_prepare, _draw_all)

    def start(self, m: AttackerMetrics, synthetic: bool) -> Drawing:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._job.start(m, self.paths, synthetic)
        return self

    def cancel(self) -> None:
        """Stop the child (the audit failed): no figure is finished after this returns."""
        self._job.cancel()

    def wait(self) -> dict[str, Path]:
        """The figures' paths once all are drawn."""
        return self._job.result()


def draw_all(m: AttackerMetrics, folder: Path, synthetic: bool) -> dict[str, Path]:
    """Every figure (:class:`Drawing`, waited for)."""
    return Drawing(folder).start(m, synthetic).wait()
