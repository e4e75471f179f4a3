"""A defense's figures over time, as one self-contained HTML page.

:func:`trend_points` turns stored runs (:class:`~shieldbench.store.RunInfo`, oldest
first) into points with their 95% intervals, one series per defense identity
(canonical spec and version: a threshold variant or a new version is its own
series, never mixed into another), and marks a run where a change from the run
before it *in its series* is significant: Fisher's exact test (two-sided, ``alpha`` 0.05)
on the block-rate and false-positive counts of the two runs. It is a two-sample
test, conservative for runs on the same samples (a paired test would need every
outcome; ``shieldbench gate`` and ``monitor`` do that), and it needs no outcome to
be read, so a trend over thousands of runs renders in seconds.

:func:`render_trend` draws block rate, false positive rate and per-call p95 latency, each
point with its interval, significant changes ringed in red, in the style of the
reports (same stylesheet, inline SVG, no network, escaped text).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from shieldbench.charts import (
    Axes,
    Box,
    LegendEntry,
    Svg,
    legend,
    nice_ticks,
    percent,
    plain,
    title,
)
from shieldbench.identity import DefenseIdentity, identity_labels

if TYPE_CHECKING:
    from shieldbench.store import RunInfo

__all__ = ["TrendPoint", "render_trend", "trend_points", "trend_series"]

_COLORS = ("#175cd3", "#027a48", "#b54708", "#6941c6", "#c11574", "#0e7090")
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none';"
    " form-action 'none'"
)


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run on the trend, and which of its changes were significant."""

    run: RunInfo
    block_p: float | None
    fpr_p: float | None
    alpha: float

    @property
    def identity(self) -> DefenseIdentity:
        """The series this run belongs to."""
        return self.run.identity

    @property
    def block_changed(self) -> bool:
        return self.block_p is not None and self.block_p < self.alpha

    @property
    def fpr_changed(self) -> bool:
        return self.fpr_p is not None and self.fpr_p < self.alpha


def _fisher(a: dict[str, Any], b: dict[str, Any], k: str, n: str) -> float | None:
    try:
        k1, n1, k2, n2 = int(a[k]), int(a[n]), int(b[k]), int(b[n])
    except (KeyError, TypeError, ValueError):
        return None
    if not n1 or not n2:
        return None
    from scipy import stats

    return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


def trend_points(runs: Sequence[RunInfo], *, alpha: float = 0.05) -> list[TrendPoint]:
    """The runs as trend points (in the order given), each tested against the run
    before it of the same identity; the first run of an identity is not tested."""
    points = []
    last: dict[DefenseIdentity, RunInfo] = {}
    for run in runs:
        identity = run.identity
        before = last.get(identity)
        last[identity] = run
        if before is None:
            points.append(TrendPoint(run, None, None, alpha))
            continue
        a, b = dict(before.extra.get("counts") or {}), dict(run.extra.get("counts") or {})
        points.append(
            TrendPoint(run, _fisher(a, b, "tp", "attacks"), _fisher(a, b, "fp", "benign"), alpha)
        )
    return points


def trend_series(points: Sequence[TrendPoint]) -> dict[DefenseIdentity, str]:
    """The identities on the trend, in order of first appearance, with their labels
    (the spec, and the version where two series share a spec)."""
    identities = list(dict.fromkeys(p.identity for p in points))
    return dict(zip(identities, identity_labels(identities), strict=True))


_TITLES = {
    "block": "Block rate (TPR), 95% Wilson interval",
    "fpr": "False positive rate, 95% Wilson interval",
    "p95": "per-call p95 latency (ms), 95% order-statistic interval",
}


def _triple(p: TrendPoint, which: str) -> tuple[float | None, float | None, float | None]:
    r = p.run
    return {"block": r.block_rate, "fpr": r.fpr, "p95": r.p95_ms}[which]


def _chart(points: Sequence[TrendPoint], which: str) -> str:
    """One figure over the runs (x: the run's position, labelled with its start time):
    each series' points joined, with their intervals; significant changes ringed."""
    series = trend_series(points)
    rate = which != "p95"
    known = [v for p in points for v in _triple(p, which) if v is not None]
    top = max([0.01 if rate else 1.0, *known])
    ticks = nice_ticks(0.0, top, 5)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else top
    y_end = step * math.ceil(top / step - 1e-9)
    heading = _TITLES[which]
    svg = Svg(
        f"trend-{which}",
        760,
        270,
        title=heading,
        desc=f"{len(points)} runs of {len(series)} series, oldest first; ringed points: "
        "a significant change from the run before in the same series",
    )
    title(svg, 6, 16, heading)
    ax = Axes(svg, Box(62, 28, 560, 190), x=(-0.5, len(points) - 0.5), y=(0.0, y_end))
    ax.frame(x_format=lambda _: "", y_format=percent if rate else plain, x_ticks=2)
    every = max(1, len(points) // 12)
    for i in range(0, len(points), every):
        started = points[i].run.started
        for k, text in enumerate((started.strftime("%Y-%m-%d"), started.strftime("%H:%M"))):
            svg.text(ax.x(i), ax.box.bottom + 14 + 10 * k, text, size=7, anchor="middle")
    keys: list[LegendEntry] = []
    ax.begin_data()
    for k, (identity, name) in enumerate(series.items()):
        colour = _COLORS[k % len(_COLORS)]
        keys.append(LegendEntry(name, colour, "o"))
        line = []
        for i, p in enumerate(points):
            value, low, high = _triple(p, which)
            if value is None or p.identity != identity:
                continue
            x, y = ax.x(i), ax.y(value)
            line.append((x, y))
            lo, hi = (
                ax.y(low if low is not None else value),
                ax.y(high if high is not None else value),
            )
            svg.line(x, lo, x, hi, stroke=colour, width=1.0)
            for end in (lo, hi):
                svg.line(x - 3, end, x + 3, end, stroke=colour, width=1.0)
            tip = f"{name}, {p.run.started:%Y-%m-%d %H:%M}: {_pct(_triple(p, which), ms=not rate)}"
            svg.marker("o", x, y, 6, fill=colour, stroke=colour, tip=tip)
            changed = p.block_changed if which == "block" else p.fpr_changed
            if rate and changed:
                svg.marker(
                    "o",
                    x,
                    y,
                    16,
                    fill="none",
                    stroke="#b42318",
                    width=2.0,
                    tip="significant change",
                )
        svg.polyline(line, stroke=colour, width=1.2)
    ax.end_data()
    if any((p.block_changed if which == "block" else p.fpr_changed) for p in points) and rate:
        keys.append(LegendEntry("significant change", "#b42318", "line"))
    if len(keys) > 1:
        legend(svg, ax.box.right + 12, ax.box.top, keys, size=7)
    return svg.render()


def _pct(t: tuple[float | None, float | None, float | None], *, ms: bool = False) -> str:
    value, low, high = t
    if value is None:
        return "–"

    def f(x: float | None) -> str:
        if x is None:  # only a latency bound can be missing: too few calls for the tail
            return "none (too few calls)"
        return f"{x:.2f}" if ms else f"{100 * x:.1f}%"

    return f"{f(value)} [{f(low)}–{f(high)}]"


def render_trend(points: Sequence[TrendPoint], *, title: str) -> str:
    """The HTML page (a string): three charts and a table of the runs."""
    css = resources.files("shieldbench.reports").joinpath("templates/report.css").read_text()
    e = html.escape
    series = trend_series(points)
    rows = []
    for p in points:
        r = p.run
        changes = [n for n, c in (("block rate", p.block_changed), ("FPR", p.fpr_changed)) if c]
        rows.append(
            "<tr>"
            f"<td>{e(r.started.strftime('%Y-%m-%d %H:%M'))}</td><td>{e(r.id)}</td>"
            f"<td>{e(series[p.identity])}</td><td>{e(r.defense_version or '')}</td>"
            f"<td class=num>{e(_pct(r.block_rate))}</td><td class=num>{e(_pct(r.fpr))}</td>"
            f"<td class=num>{e(_pct(r.p95_ms, ms=True))}</td>"
            f"<td>{e(r.git_commit[:10] if r.git_commit else '')}</td>"
            f"<td>{e(' '.join(f'{k}={v}' for k, v in sorted(r.tags.items())))}</td>"
            f"<td>{e(', '.join(changes))}</td></tr>"
        )
    charts = "".join(f"<figure>{_chart(points, w)}</figure>" for w in ("block", "fpr", "p95"))
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>{e(title)}</title><style>{css}</style></head><body>"
        f'<header class="top"><h1>{e(title)}</h1><p class="muted">{len(points)} runs of'
        f" {len(series)} defense{'s' * (len(series) != 1)} (one series per canonical spec and"
        " version, never mixed); ringed points: a change from the run before in the same"
        " series that is significant (Fisher's exact"
        f" test, alpha {points[0].alpha if points else 0.05:g}).</p></header><main>"
        f"<section><h2>Over time</h2>{charts}</section>"
        "<section><h2>Runs</h2><table><tr><th>started (UTC)</th><th>run</th><th>defense</th>"
        "<th>version</th>"
        "<th>block rate</th><th>FPR</th><th>per-call p95 ms</th><th>commit</th><th>tags</th>"
        f"<th>significant change</th></tr>{''.join(rows)}</table></section>"
        "</main></body></html>\n"
    )
