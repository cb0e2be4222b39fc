"""SVG markup for the audit's figures: a canvas of shapes and text, axes and colour scales.

There is no layout engine. Text is placed by its anchor, and the space it needs is estimated from
its length (:func:`text_width`, generous for DejaVu Sans, Verdana and Arial); the browser test of
the figures checks that every text fits. The markup depends only on the numbers drawn, so the
same metrics give the same bytes on every machine.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

FONT = "DejaVu Sans, Verdana, Arial, sans-serif"
CHAR_EM = 0.62
"""Estimated advance of one character, in font sizes (DejaVu Sans averages ~0.55 on labels)."""

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
"""Categorical colours (matplotlib's tab10)."""

REDS = ("#fff5f0", "#fee0d2", "#fcbba1", "#fc9272", "#fb6a4a", "#ef3b2c", "#cb181d", "#a50f15", "#67000d")
"""ColorBrewer's sequential Reds, 9 classes, from 0 to 1 at equal steps."""

MARKERS = ("circle", "square", "diamond", "triangle-up", "triangle-down", "pentagon", "hexagon", "star")

_NICE_TOPS = {1: 0.2, 2: 0.5, 5: 1, 10: 2, 20: 5, 25: 5, 50: 10, 100: 20}
"""Axis end -> tick step, for percentages."""


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters that XML 1.0 forbids (a model or task name can hold them): written as U+FFFD."""


def xml_text(text: str) -> str:
    """``text`` escaped for an element's content, with characters XML forbids replaced (a carriage
    return is written as a reference: a parser would read it as a line feed). Not
    ``xml.sax.saxutils``, whose import pulls in urllib and ssl (~30 ms of the audit's start)."""
    text = _NOT_XML.sub("\ufffd", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\r", "&#13;")


def _attribute(value: str) -> str:
    return '"' + xml_text(value).replace('"', "&quot;") + '"'


def num(x: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros, never ``-0``."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def text_width(text: str, size: float) -> float:
    """A generous estimate of the width of ``text`` set in ``size``: wide (East Asian) characters
    count one em, combining marks nothing."""
    ems = 0.0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        ems += 1.0 if unicodedata.east_asian_width(ch) in "WF" else CHAR_EM
    return ems * size


def reds(fraction: float) -> str:
    """The Reds colour of a fraction in [0, 1] (clipped), interpolated between the nine classes."""
    f = min(max(fraction, 0.0), 1.0) * (len(REDS) - 1)
    i = min(int(f), len(REDS) - 2)
    lo, hi = _rgb(REDS[i]), _rgb(REDS[i + 1])
    t = f - i
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(lo, hi, strict=True))


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


@dataclass(frozen=True)
class Axis:
    """A linear map from values in [lo, hi] to pixels in [start, end], with its ticks."""

    lo: float
    hi: float
    start: float
    end: float
    step: float

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    @property
    def ticks(self) -> list[float]:
        n = round((self.hi - self.lo) / self.step)
        return [self.lo + k * self.step for k in range(n + 1)]


def percent_axis(values: Iterable[float], start: float, end: float) -> Axis:
    """From 0 to the smallest of 1, 2, 5, 10, 20, 25, 50, 100 % that holds every finite value
    (100 % when none is finite; past 100, the next multiple of 20)."""
    finite = [v for v in values if math.isfinite(v)]
    peak = max(finite, default=100.0)
    for top, step in _NICE_TOPS.items():
        if peak <= top:
            return Axis(0.0, float(top), start, end, float(step))
    return Axis(0.0, 20.0 * math.ceil(peak / 20.0), start, end, 20.0)


def tick_label(value: float) -> str:
    return f"{value:g}"


class Canvas:
    """An SVG document built element by element; ``tip`` adds a ``<title>`` (a hover tooltip)."""

    def __init__(self, width: float, height: float, title: str) -> None:
        self.width, self.height = math.ceil(width), math.ceil(height)
        self._defs: list[str] = []
        self._parts = [f"<title>{xml_text(title)}</title>",
                       '<rect width="100%" height="100%" fill="#ffffff"/>']

    def _element(self, tag: str, attrs: dict[str, str | float | None], tip: str | None = None,
                 body: str | None = None) -> None:
        written = " ".join(f"{name}={_attribute(num(v) if isinstance(v, float) else str(v))}"
                           for name, v in attrs.items() if v is not None)
        inner = (f"<title>{xml_text(tip)}</title>" if tip else "") + (xml_text(body) if body else "")
        self._parts.append(f"<{tag} {written}>{inner}</{tag}>" if inner else f"<{tag} {written}/>")

    @contextmanager
    def group(self, kind: str) -> Iterator[None]:
        """The elements made inside, in a ``<g class="kind">`` (for styling, and for tests to find)."""
        self._parts.append(f"<g class={_attribute(kind)}>")
        yield
        self._parts.append("</g>")

    def rect(self, x: float, y: float, width: float, height: float, fill: str,
             stroke: str | None = None, tip: str | None = None) -> None:
        self._element("rect", {"x": float(x), "y": float(y), "width": float(width),
                               "height": float(height), "fill": fill, "stroke": stroke}, tip)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = "#000000",
             width: float = 1.0, tip: str | None = None) -> None:
        self._element("line", {"x1": float(x1), "y1": float(y1), "x2": float(x2), "y2": float(y2),
                               "stroke": stroke, "stroke-width": float(width)}, tip)

    def text(self, x: float, y: float, text: str, size: float = 10.0, anchor: str = "start",
             rotate: float | None = None, fill: str | None = None, middle: bool = False) -> None:
        """``text`` with its baseline at ``y`` (its middle, with ``middle``), anchored at ``x``
        (``start``, ``middle`` or ``end``), turned by ``rotate`` degrees about (x, y)."""
        baseline = y + 0.35 * size if middle else y
        self._element("text", {
            "x": float(x), "y": float(baseline), "font-size": float(size),
            "text-anchor": None if anchor == "start" else anchor, "fill": fill,
            "transform": None if rotate is None else f"rotate({num(rotate)} {num(x)} {num(y)})"},
            body=text)

    def marker(self, shape: str, x: float, y: float, radius: float, fill: str,
               tip: str | None = None) -> None:
        """A filled marker (one of :data:`MARKERS`) of about the area of a circle of ``radius``."""
        if shape == "circle":
            self._element("circle", {"cx": float(x), "cy": float(y), "r": float(radius),
                                     "fill": fill, "fill-opacity": 0.85}, tip)
            return
        self._element("polygon", {"points": " ".join(f"{num(px)},{num(py)}"
                                                     for px, py in _corners(shape, x, y, radius)),
                                  "fill": fill, "fill-opacity": 0.85}, tip)

    def vertical_gradient(self, name: str, colours: Sequence[str]) -> str:
        """A gradient from ``colours[0]`` at the bottom to ``colours[-1]`` at the top; its fill
        reference."""
        stops = "".join(f'<stop offset="{num(k / (len(colours) - 1))}" stop-color="{c}"/>'
                        for k, c in enumerate(colours))
        self._defs.append(f'<linearGradient id="{name}" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient>')
        return f"url(#{name})"

    def markup(self) -> str:
        defs = [f"<defs>{''.join(self._defs)}</defs>"] if self._defs else []
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}" font-family={_attribute(FONT)}>')
        return "\n".join([head, *defs, *self._parts, "</svg>"]) + "\n"


_SHAPES = {"square": (4, 45.0, 1.25, 1.0), "diamond": (4, 0.0, 1.3, 1.0), "triangle-up": (3, 0.0, 1.4, 1.0),
           "triangle-down": (3, 180.0, 1.4, 1.0), "pentagon": (5, 0.0, 1.15, 1.0),
           "hexagon": (6, 0.0, 1.1, 1.0), "star": (10, 0.0, 1.5, 0.45)}
"""shape -> (corners, first corner's angle from straight up, outer radius / radius, inner / outer);
a star alternates its outer and inner radius."""


def _corners(shape: str, x: float, y: float, radius: float) -> list[tuple[float, float]]:
    corners, turn, scale, inner = _SHAPES[shape]
    out = []
    for k in range(corners):
        r = radius * scale * (inner if k % 2 else 1.0)
        angle = math.radians(turn + 360.0 * k / corners)
        out.append((x + r * math.sin(angle), y - r * math.cos(angle)))
    return out
