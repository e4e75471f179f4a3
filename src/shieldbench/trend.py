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
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from shieldbench.identity import DefenseIdentity, identity_labels

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


def _chart(points: Sequence[TrendPoint], which: str) -> str:
    from shieldbench.reports import percent_formatter, render_svg

    def triple(p: TrendPoint) -> tuple[float | None, float | None, float | None]:
        r = p.run
        return {"block": r.block_rate, "fpr": r.fpr, "p95": r.p95_ms}[which]

    title = {
        "block": "Block rate (TPR), 95% Wilson interval",
        "fpr": "False positive rate, 95% Wilson interval",
        "p95": "per-call p95 latency (ms), 95% order-statistic interval",
    }[which]

    series = trend_series(points)

    def draw(fig: Figure) -> None:
        ax = fig.add_subplot()
        marks = []
        for k, (identity, label) in enumerate(series.items()):
            xs, ys, lo, hi = [], [], [], []
            for i, p in enumerate(points):
                value, low, high = triple(p)
                if value is None or p.identity != identity:
                    continue
                xs.append(i)
                ys.append(value)
                lo.append(value - (low if low is not None else value))
                hi.append((high if high is not None else value) - value)
                changed = p.block_changed if which == "block" else p.fpr_changed
                if changed and which != "p95":
                    marks.append((i, value))
            color = _COLORS[k % len(_COLORS)]
            ax.errorbar(
                xs, ys, yerr=[lo, hi], fmt="o-", capsize=3, color=color, lw=1.2, label=label
            )
        if marks:
            mx, my = [m[0] for m in marks], [m[1] for m in marks]
            ax.scatter(
                mx,
                my,
                s=160,
                facecolors="none",
                edgecolors="#b42318",
                linewidths=2,
                label="significant change",
            )
        if marks or len(series) > 1:
            ax.legend(loc="best", fontsize=8)
        ax.set_title(title, loc="left")
        if which != "p95":
            ax.yaxis.set_major_formatter(percent_formatter())
        step = max(1, len(points) // 12)
        ticks = list(range(0, len(points), step))
        ax.set_xticks(ticks)
        ax.set_xticklabels(
            [points[i].run.started.strftime("%Y-%m-%d\n%H:%M") for i in ticks], fontsize=8
        )

    return render_svg(f"trend-{which}", (9.0, 3.2), draw)


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
