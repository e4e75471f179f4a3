"""One SVG document, written element by element: escaped text, rounded numbers.

:class:`Svg` is the only place a chart's markup is written. Every string from data
goes through :func:`markupsafe.escape` (so a label ``<script>`` is the text
"<script>", never an element), control characters are dropped, numbers are
rounded to a tenth of a pixel (the same chart gives byte-identical SVG), and the
document carries an accessible name and description (``<title>``, ``<desc>``,
``aria-labelledby``). Colours are presentation attributes (``fill="#0072B2"``),
not ``style`` attributes, and there is no ``<style>`` element, so the page's
Content-Security-Policy need not allow inline styles for these charts. Element ids
are prefixed with the chart's name, so several charts in one page never share one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from markupsafe import escape

__all__ = ["FONT", "Svg", "text_width"]

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
_ID = re.compile(r"[^A-Za-z0-9_-]")


def _n(x: float) -> str:
    """A coordinate: one decimal, no trailing ``.0``, never ``-0``."""
    text = f"{x:.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def _e(text: str) -> str:
    return str(escape(_CONTROL.sub(" ", text)))


def text_width(text: str, size: float) -> float:
    """An estimate of ``text``'s width in pixels at font ``size`` (a sans-serif's
    average advance, a little generous), for laying out margins and legends without
    measuring fonts."""
    return 0.58 * size * len(text)


class Svg:
    """An SVG chart of ``width`` x ``height`` pixels (it scales with its ``viewBox``).

    Drawing methods append elements in order (later ones on top); :meth:`render`
    returns the document. ``title`` is the chart's accessible name, ``desc`` what a
    screen reader says about its content."""

    def __init__(self, name: str, width: float, height: float, *, title: str, desc: str) -> None:
        self.width = width
        self.height = height
        self.prefix = "chart-" + _ID.sub("-", name)
        self._clips = 0
        self._parts: list[str] = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_n(width)}" height="{_n(height)}"'
            f' viewBox="0 0 {_n(width)} {_n(height)}" role="img"'
            f' aria-labelledby="{self.prefix}-title {self.prefix}-desc"'
            f' font-family="{FONT}">'
            f'<title id="{self.prefix}-title">{_e(title)}</title>'
            f'<desc id="{self.prefix}-desc">{_e(desc)}</desc>'
            f'<rect width="{_n(width)}" height="{_n(height)}" fill="#ffffff"/>'
        ]

    def _add(self, element: str, attrs: dict[str, str | float | None], tip: str | None) -> None:
        shown = " ".join(
            f'{k.replace("_", "-")}="{_n(v) if isinstance(v, float | int) else _e(v)}"'
            for k, v in attrs.items()
            if v is not None
        )
        if tip is None:
            self._parts.append(f"<{element} {shown}/>")
        else:
            self._parts.append(f"<{element} {shown}><title>{_e(tip)}</title></{element}>")

    def clip(self, x: float, y: float, width: float, height: float) -> str:
        """Define a clipping rectangle; returns the ``clip-path`` value that uses it."""
        self._clips += 1
        ident = f"{self.prefix}-clip{self._clips}"
        self._parts.append(
            f'<clipPath id="{ident}"><rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}"'
            f' height="{_n(height)}"/></clipPath>'
        )
        return f"url(#{ident})"

    def open_group(self, *, clip: str | None = None, label: str | None = None) -> None:
        """Start a ``<g>`` (clipped to a :meth:`clip`, named by ``label``)."""
        attrs = "" if clip is None else f' clip-path="{clip}"'
        attrs += "" if label is None else f' aria-label="{_e(label)}"'
        self._parts.append(f"<g{attrs}>")

    def close_group(self) -> None:
        self._parts.append("</g>")

    def line(
        self,
        x1: float,
        y1: float,
        x2: float,
        y2: float,
        *,
        stroke: str,
        width: float = 1.0,
        dash: str | None = None,
        opacity: float | None = None,
    ) -> None:
        self._add(
            "line",
            {
                "x1": x1,
                "y1": y1,
                "x2": x2,
                "y2": y2,
                "stroke": stroke,
                "stroke_width": width,
                "stroke_dasharray": dash,
                "stroke_opacity": opacity,
            },
            None,
        )

    def rect(
        self,
        x: float,
        y: float,
        width: float,
        height: float,
        *,
        fill: str,
        opacity: float | None = None,
        stroke: str | None = None,
        tip: str | None = None,
    ) -> None:
        attrs: dict[str, str | float | None] = {"x": x, "y": y, "width": width, "height": height}
        attrs |= {"fill": fill, "fill_opacity": opacity, "stroke": stroke}
        self._add("rect", attrs, tip)

    def polyline(
        self,
        points: Iterable[tuple[float, float]],
        *,
        stroke: str,
        width: float = 1.4,
        dash: str | None = None,
        opacity: float | None = None,
        tip: str | None = None,
    ) -> None:
        shown = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        attrs: dict[str, str | float | None] = {"points": shown, "fill": "none"}
        attrs |= {"stroke": stroke, "stroke_width": width, "stroke_dasharray": dash}
        attrs |= {"stroke_opacity": opacity, "stroke_linejoin": "round"}
        self._add("polyline", attrs, tip)

    def polygon(
        self, points: Sequence[tuple[float, float]], *, fill: str, opacity: float | None = None
    ) -> None:
        shown = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self._add("polygon", {"points": shown, "fill": fill, "fill_opacity": opacity}, None)

    def marker(
        self,
        shape: str,
        x: float,
        y: float,
        size: float,
        *,
        fill: str,
        stroke: str,
        width: float = 0.5,
        tip: str | None = None,
    ) -> None:
        """A point marker centred on ``(x, y)``, ``size`` pixels across: ``o`` circle,
        ``s`` square, ``^``/``v`` triangles, ``D`` diamond, ``P`` plus."""
        r = size / 2
        paint: dict[str, str | float | None] = {"fill": fill, "stroke": stroke}
        paint["stroke_width"] = width
        if shape == "o":
            self._add("circle", {"cx": x, "cy": y, "r": r, **paint}, tip)
            return
        outlines = {
            "s": ((-r, -r), (r, -r), (r, r), (-r, r)),
            "^": ((0, -r), (r, r), (-r, r)),
            "v": ((0, r), (r, -r), (-r, -r)),
            "D": ((0, -r), (r, 0), (0, r), (-r, 0)),
            "P": tuple(
                (a * r, b * r)
                for a, b in (
                    (-0.33, -1),
                    (0.33, -1),
                    (0.33, -0.33),
                    (1, -0.33),
                    (1, 0.33),
                    (0.33, 0.33),
                    (0.33, 1),
                    (-0.33, 1),
                    (-0.33, 0.33),
                    (-1, 0.33),
                    (-1, -0.33),
                    (-0.33, -0.33),
                )
            ),
        }
        shown = " ".join(f"{_n(x + dx)},{_n(y + dy)}" for dx, dy in outlines[shape])
        self._add("polygon", {"points": shown, **paint}, tip)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: float = 9.0,
        anchor: str = "start",
        fill: str = "#222222",
        bold: bool = False,
        rotate: float | None = None,
        tip: str | None = None,
    ) -> None:
        """Text whose baseline starts (``anchor``: ``start``, ``middle``, ``end``) at
        ``(x, y)``; ``rotate``: degrees about that point; ``tip``: a tooltip."""
        attrs = f'x="{_n(x)}" y="{_n(y)}" font-size="{_n(size)}" fill="{fill}"'
        if anchor != "start":
            attrs += f' text-anchor="{anchor}"'
        if bold:
            attrs += ' font-weight="bold"'
        if rotate is not None:
            attrs += f' transform="rotate({_n(rotate)} {_n(x)} {_n(y)})"'
        tooltip = "" if tip is None else f"<title>{_e(tip)}</title>"
        self._parts.append(f"<text {attrs}>{tooltip}{_e(text)}</text>")

    def render(self) -> str:
        """The finished ``<svg>`` element."""
        return "".join([*self._parts, "</svg>"])
