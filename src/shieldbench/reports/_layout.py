"""Layout helpers shared by the HTML and Markdown views for reports of many defenses.

Table cells wrap between words, never inside one, so a column is at least as wide
as its longest word: :func:`word_px` estimates that, and :func:`fit_columns` splits
a row of defense columns into tables that each fit a width budget (a 1280 px
window for HTML, a pull-request comment for Markdown). :func:`short_id` cuts a
hash or run id for display (the HTML keeps the full value in a title and a copy
button); :func:`shared_prefix` finds the benchmark prefix that run ids share.

Example:
    >>> short_id("sha256:0b510f3d4209749a5ba2f0"), short_id("r-1")
    ('sha256:0b510f3d42…', 'r-1')
    >>> fit_columns([100, 300, 300, 100], budget=500)
    [range(0, 2), range(2, 4)]
    >>> fit_columns([100] * 6, budget=500)
    [range(0, 3), range(3, 6)]
    >>> shared_prefix(["20261124T182241Z-065253-00", "20261124T182241Z-065253-01"])
    '20261124T182241Z-065253-'
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["fit_columns", "shared_prefix", "short_id", "word_px"]


def short_id(value: str, *, keep: int = 10) -> str:
    """A hash or id cut for display: ``sha256:`` plus ``keep`` digits, or head … tail
    of a long id; short values are returned whole."""
    if ":" in value:
        scheme, _, digits = value.partition(":")
        return value if len(digits) <= keep + 2 else f"{scheme}:{digits[:keep]}…"
    if len(value) <= 16:
        return value
    return f"{value[:8]}…{value[-6:]}"


def word_px(text: str, *, char_px: float, padding: float) -> float:
    """The narrowest a cell holding ``text`` can be when it wraps only between words."""
    return padding + char_px * max((len(w) for w in text.split()), default=0)


def fit_columns(widths: Sequence[float], *, budget: float, most: int = 6) -> list[range]:
    """Consecutive groups of columns, each at most ``budget`` wide in all and at most
    ``most`` columns (a column wider than the budget gets a group of its own)."""
    out: list[range] = []
    start, used = 0, 0.0
    for i, w in enumerate(widths):
        if i > start and (used + w > budget or i - start >= most):
            out.append(range(start, i))
            start, used = i, 0.0
        used += w
    if widths:
        out.append(range(start, len(widths)))
    # As many groups, but of even size, when those fit too (5 + 1 reads worse than 3 + 3).
    n, k = len(widths), len(out)
    bounds = [round(j * n / k) for j in range(k + 1)] if k else []
    even = [range(bounds[j], bounds[j + 1]) for j in range(k)]
    if all(len(g) <= most and (len(g) == 1 or sum(widths[i] for i in g) <= budget) for g in even):
        return even
    return out


def shared_prefix(ids: Sequence[str], *, at_least: int = 8) -> str:
    """The prefix every id shares, up to and including its last ``-``, ``_`` or ``.``
    (``""`` when shorter than ``at_least``, or with fewer than two ids)."""
    if len(ids) < 2:
        return ""
    first, rest = ids[0], ids[1:]
    size = next(
        (i for i, c in enumerate(first) if any(i >= len(o) or o[i] != c for o in rest)), len(first)
    )
    common = first[:size]
    cut = max(common.rfind(c) for c in "-_.") + 1
    return common[:cut] if cut >= at_least else ""
