"""The SVG figures: every mark sits where the figure's own axis ticks say its value is, every cell
shows its task and attacker's counts in the colour of its share, hostile names give well-formed
SVG, and in a real Chromium every text lies inside its figure and every cell has its colour."""

from __future__ import annotations

import dataclasses
import io
import math
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vcrime_audit.audit.figures import draw_all
from vcrime_audit.audit.metrics import AttackerMetrics
from vcrime_audit.audit.pipeline import run_audit
from vcrime_audit.audit.svg import REDS, num, percent_axis, reds, text_width
from vcrime_audit.audit.synthetic import SyntheticConfig, make_synthetic_store

NS = "{http://www.w3.org/2000/svg}"
TOLERANCE = 0.03  # px: coordinates are written with two decimals


@pytest.fixture(scope="module")
def metrics(tmp_path_factory) -> AttackerMetrics:
    path = make_synthetic_store(tmp_path_factory.mktemp("figures") / "s.sqlite",
                                SyntheticConfig(attackers=4, tasks=6, seeds=2, judges=3, seed=3))
    return run_audit(path, n_resamples=100, seed=1).metrics


def renamed(m: AttackerMetrics, names: dict[str, str]) -> AttackerMetrics:
    """The same numbers under other attacker, judge and task names."""
    def r(name: str) -> str:
        return names.get(name, name)

    def by_attacker(d: dict) -> dict:
        return {r(a): v for a, v in d.items()}

    return dataclasses.replace(
        m, attackers=tuple(map(r, m.attackers)), judges=tuple(map(r, m.judges)),
        non_failure={r(j): by_attacker(d) for j, d in m.non_failure.items()},
        catastrophic={r(j): by_attacker(d) for j, d in m.catastrophic.items()},
        non_failure_median=by_attacker(m.non_failure_median),
        catastrophic_median=by_attacker(m.catastrophic_median), over_harm=by_attacker(m.over_harm),
        task_attacker={r(t): by_attacker(d) for t, d in m.task_attacker.items()})


def parse(path: Path) -> ElementTree.Element:
    return ElementTree.parse(path).getroot()


def groups(root: ElementTree.Element, kind: str) -> list[ElementTree.Element]:
    return [g for g in root.iter(f"{NS}g") if g.get("class") == kind]


def tip(element: ElementTree.Element) -> str | None:
    title = element.find(f"{NS}title")
    return None if title is None else title.text


def tick_map(axis: ElementTree.Element, coordinate: str):
    """value -> pixel, read off the axis: each tick's label and its grid line; checks the ticks
    are evenly spaced in both."""
    ticks = [(float(g.find(f"{NS}text").text), float(g.find(f"{NS}line").get(coordinate)))
             for g in groups(axis, "tick")]
    assert len(ticks) >= 3
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    for v, p in ticks:
        assert p == pytest.approx(p0 + (v - v0) / (v1 - v0) * (p1 - p0), abs=TOLERANCE)
    return lambda value: p0 + (value - v0) / (v1 - v0) * (p1 - p0)


def centre(mark: ElementTree.Element) -> tuple[float, float]:
    if mark.tag == f"{NS}circle":
        return float(mark.get("cx")), float(mark.get("cy"))
    if mark.tag == f"{NS}line":
        return float(mark.get("x1")), (float(mark.get("y1")) + float(mark.get("y2"))) / 2
    points = [tuple(map(float, p.split(","))) for p in mark.get("points").split()]
    return sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)


def test_colours_scales_and_numbers_by_hand():
    assert reds(0.0) == REDS[0] == "#fff5f0" and reds(1.0) == REDS[-1] == "#67000d"
    assert reds(0.5) == REDS[4] and reds(-3) == REDS[0] and reds(7) == REDS[-1]
    # halfway between #fff5f0 and #fee0d2: (254.5, 234.5, 225) rounded half to even
    assert reds(1 / 16) == "#feeae1"
    assert percent_axis([3.2, 7.9, math.nan], 0, 100).hi == 10
    assert percent_axis([3.2, 7.9], 0, 100).ticks == [0, 2, 4, 6, 8, 10]
    assert percent_axis([], 0, 100).hi == 100 and percent_axis([0.0], 0, 100).hi == 1
    assert percent_axis([20.01], 0, 100).ticks == [0, 5, 10, 15, 20, 25]
    assert percent_axis([101], 0, 100).hi == 120
    axis = percent_axis([50], 10, 110)
    assert (axis(0), axis(25), axis(50)) == (10, 60, 110)
    assert [num(x) for x in (1.0, 0.125, -0.001, 2.5, 1e-9)] == ["1", "0.12", "0", "2.5", "0"]
    assert text_width("abc", 10) == pytest.approx(18.6) and text_width("日本", 10) == 20
    assert text_width("e\u0301", 10) == text_width("e", 10)  # a combining accent takes no room


def test_judge_markers_sit_at_their_estimates_on_the_panels_axes(metrics, tmp_path):
    root = parse(draw_all(metrics, tmp_path, synthetic=True)["judges"])
    panels = groups(root, "panel")
    assert len(panels) == 2
    drawn = 0
    for panel, per_judge, median in ((panels[0], metrics.non_failure, metrics.non_failure_median),
                                     (panels[1], metrics.catastrophic, metrics.catastrophic_median)):
        x_of = tick_map(groups(panel, "x-axis")[0], "x1")
        rows: dict[str, float] = {}
        for mark in groups(panel, "marks")[0]:
            attacker, who = re.match(r"(.+?), (?:judged by (.+?)|median across judges):", tip(mark)).groups()
            value = (median[attacker] if who is None else per_judge[who][attacker]).estimate
            x, y = centre(mark)
            assert x == pytest.approx(x_of(100 * value), abs=TOLERANCE), tip(mark)
            assert rows.setdefault(attacker, y) == pytest.approx(y), "one row per attacker"
            drawn += 1
        assert list(rows) == list(metrics.attackers)
        assert sorted(rows.values()) == list(rows.values())
    finite = sum(math.isfinite(e.estimate) for per_judge in (metrics.non_failure, metrics.catastrophic)
                 for by_attacker in per_judge.values() for e in by_attacker.values())
    medians = sum(math.isfinite(e.estimate) for d in (metrics.non_failure_median, metrics.catastrophic_median)
                  for e in d.values())
    assert drawn == finite + medians > 0


def test_scatter_points_sit_at_non_failure_and_over_harm(metrics, tmp_path):
    root = parse(draw_all(metrics, tmp_path, synthetic=True)["scatter"])
    x_of = tick_map(groups(root, "x-axis")[0], "x1")
    y_of = tick_map(groups(root, "y-axis")[0], "y1")
    points = [m for m in groups(root, "marks")[0] if m.tag == f"{NS}circle"]
    assert len(points) == len(metrics.attackers)
    for point in points:
        attacker = tip(point).split(": non-failure")[0]
        x, y = centre(point)
        assert x == pytest.approx(x_of(100 * metrics.non_failure_median[attacker].estimate), abs=TOLERANCE)
        assert y == pytest.approx(y_of(100 * metrics.over_harm[attacker].estimate), abs=TOLERANCE)
    title = root.find(f"{NS}title").text
    assert title.endswith(f"Spearman rho = {metrics.harm_vs_success:.2f}")


def test_each_heatmap_cell_shows_its_counts_in_the_colour_of_its_share(metrics, tmp_path):
    root = parse(draw_all(metrics, tmp_path, synthetic=True)["heatmap"])
    cells = [r for r in groups(root, "cells")[0] if r.tag == f"{NS}rect"]
    assert len(cells) == len(metrics.task_attacker) * len(metrics.attackers)
    labels = {t.text: float(t.get("y")) for t in root.iter(f"{NS}text")}
    for rect in cells:
        task, attacker, over, runs = re.match(r"(.+) / (.+): (\d+) of (\d+) runs", tip(rect)).groups()
        cell = metrics.task_attacker[task][attacker]
        assert (int(over), int(runs)) == (cell.over_harm, len(cell.runs))
        assert rect.get("fill") == reds(cell.over_harm / len(cell.runs))
        middle = float(rect.get("y")) + float(rect.get("height")) / 2
        assert abs(labels[task] - middle) < float(rect.get("height")) / 4, "the cell is on its task's row"


def test_a_missing_cell_and_undefined_values_are_said_not_drawn(metrics, tmp_path):
    task, attacker = next(iter(metrics.task_attacker)), metrics.attackers[0]
    nan = dataclasses.replace(metrics.over_harm[attacker], estimate=math.nan, low=math.nan, high=math.nan)
    gaps = dataclasses.replace(
        metrics, over_harm={**metrics.over_harm, attacker: nan},
        task_attacker={**metrics.task_attacker,
                       task: {a: c for a, c in metrics.task_attacker[task].items() if a != attacker}})
    paths = draw_all(gaps, tmp_path, synthetic=False)
    heat = parse(paths["heatmap"])
    empty = [tip(r) for r in groups(heat, "cells")[0] if r.tag == f"{NS}rect" and "no runs" in tip(r)]
    assert empty == [f"{task} / {attacker}: no runs"]
    assert "no runs" in [t.text for t in groups(heat, "colour-bar")[0].iter(f"{NS}text")]
    scatter = parse(paths["scatter"])
    points = [m for m in groups(scatter, "marks")[0] if m.tag == f"{NS}circle"]
    assert len(points) == len(metrics.attackers) - 1
    assert f"not plotted (no value): {attacker}" in [t.text for t in scatter.iter(f"{NS}text")]


NAME = st.text(min_size=1, max_size=24)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(NAME, min_size=13, max_size=13, unique=True))
def test_any_names_give_well_formed_svg_that_says_them(metrics, tmp_path, names):
    """Model and task names come from stores and scenario files: markup characters, controls,
    lone surrogates' neighbours and right-to-left text must come out as the text itself."""
    old = [*metrics.attackers, *metrics.judges, *metrics.task_attacker]
    m = renamed(metrics, dict(zip(old, names, strict=True)))
    for path in draw_all(m, tmp_path, synthetic=True).values():
        root = ElementTree.parse(path).getroot()  # expat: strict XML 1.0
        said = "\n".join(t.text or "" for t in root.iter(f"{NS}text")) + "\n".join(
            t.text or "" for t in root.iter(f"{NS}title"))
        for name in m.attackers:
            assert re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", "\ufffd", name) in said


LONG_NAMES = {"synth-attacker-1": "a-model-with-a-rather-long-registry-name-70b-instruct",
              "synth-attacker-2": "模型甲-一个很长的名字", "synth-attacker-3": "Ünïcödé-Ñame-ﬁ-é̂",
              "synth-attacker-4": "<b>&amp;\"quoted\"</b>"}


def test_in_chromium_every_text_fits_and_every_cell_has_its_colour(metrics, tmp_path, browser, shots):
    from PIL import Image

    tasks = {t: f"{t}__{'with_a_long_suffix_' * (i % 3)}" for i, t in enumerate(metrics.task_attacker)}
    m = renamed(metrics, {**LONG_NAMES, **tasks})
    assert set(LONG_NAMES.values()) <= set(m.attackers)
    page = browser.new_page()
    try:
        for name, path in draw_all(m, tmp_path, synthetic=True).items():
            page.set_content(f"<html><body style='margin:0'>{path.read_text()}</body></html>")
            svg = page.locator("svg")
            png = svg.screenshot(path=str(shots / f"figure-{name}.png"))
            outside = page.evaluate("""() => {
                const box = document.querySelector('svg').getBoundingClientRect();
                return [...document.querySelectorAll('svg text')].map(t => [t.textContent,
                    t.getBoundingClientRect()]).filter(([_, r]) => r.left < box.left - 0.5 ||
                    r.top < box.top - 0.5 || r.right > box.right + 0.5 || r.bottom > box.bottom + 0.5)
                    .map(([text, r]) => `${text}: ${r.left},${r.top},${r.right},${r.bottom}`); }""")
            assert outside == [], f"{name}: text outside the figure"
            if name != "heatmap":
                continue
            image = Image.open(io.BytesIO(png)).convert("RGB")
            for rect in groups(parse(path), "cells")[0]:
                if rect.tag != f"{NS}rect":
                    continue
                x, y = float(rect.get("x")) + 5, float(rect.get("y")) + float(rect.get("height")) / 2
                want = [int(rect.get("fill")[k:k + 2], 16) for k in (1, 3, 5)]
                got = image.getpixel((round(x), round(y)))
                assert all(abs(a - b) <= 2 for a, b in zip(got, want, strict=True)), (tip(rect), got, want)
    finally:
        page.close()
