"""The last check before a chart's SVG is marked safe in the HTML report, and the
row limit the report's bar charts and heat map share.

The charts are written by :mod:`shieldbench.charts`, which escapes every text;
:func:`clean_svg` is defence in depth: it keeps only the ``<svg>`` element (no XML
prolog, DOCTYPE or metadata) and refuses any script, foreign object or embedded
document, so a bug in a chart could never put markup that runs into the page.
"""

from __future__ import annotations

import re

from shieldbench.errors import ShieldbenchError

__all__ = ["MAX_ROWS", "clean_svg"]

_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.S)
_FORBIDDEN = re.compile(r"<\s*(script|foreignObject|iframe|object|embed)\b", re.I)
MAX_ROWS = 40  # the most categories or mutators a bar chart or heat map shows


def clean_svg(svg: str) -> str:
    """The ``<svg>`` element alone (no XML prolog, DOCTYPE or metadata), checked to
    hold no script; :class:`ShieldbenchError` otherwise (a bug, never data)."""
    svg = _METADATA.sub("", _PROLOG.sub("", svg, count=1)).strip()
    if not svg.startswith("<svg") or _FORBIDDEN.search(svg):
        raise ShieldbenchError("chart rendering produced unexpected SVG content")
    return svg
