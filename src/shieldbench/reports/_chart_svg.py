"""Rendering one chart with matplotlib, offline, to clean inline SVG: used by the charts
not yet drawn with :mod:`shieldbench.charts` (the attack charts, the LLM attack
report's plot and the history trend); the run and comparison report charts no longer
need it.

Every chart is drawn on its own :class:`~matplotlib.figure.Figure` with an Agg
canvas (no pyplot, no global backend switch, safe in threads) and saved as SVG
text that the HTML embeds directly: no network, no image files.

- Deterministic: a fixed ``svg.hashsalt`` per chart and no date in the metadata;
  the same report gives byte-identical SVG. Element ids are prefixed with the
  chart's name, so the charts of one page never share an id.
- Hostile labels: category names and defense specs come from data. Mathtext is
  off (``text.parse_math``), so ``$`` is a dollar sign; control characters are
  dropped and labels cut to 48 characters; text is written as SVG ``<text>``
  (``svg.fonttype: none``), which matplotlib XML-escapes. :func:`clean_svg`
  keeps only the ``<svg>`` element and refuses any script or foreign object.
- Cheap to start: matplotlib (``matplotlib.figure`` and the Agg canvas only) is
  imported by :func:`render_svg`, on the first chart; a chart whose labels have a
  known extent passes :class:`Margins` and skips constrained layout.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shieldbench.charts import PALETTE, label
from shieldbench.errors import ShieldbenchError

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.ticker import PercentFormatter

__all__ = [
    "MAX_ROWS",
    "PALETTE",
    "Margins",
    "clean_svg",
    "label",
    "percent_formatter",
    "render_svg",
]

_RC: dict[str, Any] = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}
_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_FORBIDDEN = re.compile(r"<\s*(script|foreignObject|iframe|object|embed)\b", re.I)
MAX_ROWS = 40


def clean_svg(svg: str) -> str:
    """The ``<svg>`` element alone (no XML prolog, DOCTYPE or metadata), checked to
    hold no script; :class:`ShieldbenchError` otherwise (a bug, never data)."""
    svg = _METADATA.sub("", _PROLOG.sub("", svg, count=1)).strip()
    if not svg.startswith("<svg") or _FORBIDDEN.search(svg):
        raise ShieldbenchError("chart rendering produced unexpected SVG content")
    return svg


def _namespace_ids(svg: str, prefix: str) -> str:
    """Prefix every element id and every reference to one, so that several charts in
    one page never share an id (matplotlib numbers ``figure_1``, ``axes_1``... anew in
    each figure)."""
    svg = re.sub(r'\bid="', f'id="{prefix}-', svg)
    svg = re.sub(r"url\(#", f"url(#{prefix}-", svg)
    return re.sub(r'(xlink:href|href)="#', rf'\1="#{prefix}-', svg)


@dataclass(frozen=True, slots=True)
class Margins:
    """A fixed layout, in inches around the axes grid (and the gaps between its cells
    as fractions of a cell), for charts whose labels have a known, short extent.

    matplotlib's constrained layout measures every label of every axes and lays the
    figure out again (about half of a chart's drawing time, more for a grid of small
    panels); a chart that knows its margins skips that."""

    left: float
    bottom: float
    right: float
    top: float
    wspace: float = 0.2
    hspace: float = 0.2

    def apply(self, fig: Figure, size: tuple[float, float]) -> None:
        """Set ``fig``'s subplot parameters (before its axes are made)."""
        width, height = size
        fig.subplots_adjust(
            left=self.left / width,
            right=1.0 - self.right / width,
            bottom=self.bottom / height,
            top=1.0 - self.top / height,
            wspace=self.wspace,
            hspace=self.hspace,
        )


def render_svg(
    name: str,
    size: tuple[float, float],
    draw: Callable[[Figure], None],
    *,
    margins: Margins | None = None,
) -> str:
    """Draw a chart with ``draw(figure)`` and return its cleaned SVG (see module doc);
    ``name`` must be unique in the page: it salts and prefixes the SVG's ids.
    ``margins``: a fixed layout (see :class:`Margins`) instead of matplotlib's
    constrained layout, which measures every label.

    matplotlib is imported here, on the first chart, not with the package: it costs
    more than half a second, and only the HTML renderer draws. Only
    ``matplotlib.figure`` and the Agg canvas are imported, never ``pyplot``."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rc: Any = {**_RC, "svg.hashsalt": f"shieldbench:{name}"}
    with matplotlib.rc_context(rc):
        fig = Figure(figsize=size, layout=None if margins is not None else "constrained")
        FigureCanvasAgg(fig)
        if margins is not None:
            margins.apply(fig, size)
        draw(fig)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    prefix = "chart-" + re.sub(r"[^A-Za-z0-9_-]", "-", name)
    return clean_svg(_namespace_ids(buf.getvalue(), prefix))


def percent_formatter() -> PercentFormatter:
    """Axis ticks as percentages of 1.0 (call it inside a ``draw`` function)."""
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0)
