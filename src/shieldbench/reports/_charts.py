"""Charts for the HTML report: matplotlib figures rendered offline to inline SVG.

One function per chart; each returns the chart's SVG text, or ``None`` when the
report has nothing to draw. How a chart becomes safe, deterministic SVG (and why
matplotlib is imported only on the first chart) is :mod:`._chart_svg`, whose names
are re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from shieldbench.metrics import Rate
from shieldbench.reports._chart_svg import (
    MAX_ROWS,
    PALETTE,
    Margins,
    clean_svg,
    label,
    percent_formatter,
    render_svg,
)
from shieldbench.reports._model import RunSection
from shieldbench.reports._ticks import plain_log_xaxis

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "MAX_ROWS",
    "PALETTE",
    "Margins",
    "category_chart",
    "clean_svg",
    "fpr_chart",
    "heatmap_chart",
    "label",
    "latency_chart",
    "percent_formatter",
    "pr_chart",
    "render_svg",
    "roc_chart",
    "tradeoff_chart",
]


def _errors(rates: Sequence[Rate]) -> np.ndarray:
    return np.array(
        [
            [max(0.0, (r.value or 0.0) - r.ci_low) for r in rates],
            [max(0.0, r.ci_high - (r.value or 0.0)) for r in rates],
        ]
    )


def _bar_chart(
    name: str,
    runs: Sequence[RunSection],
    *,
    pick: Callable[[RunSection], dict[str, Rate]],
    xlabel: str,
    target: float | None,
    title: str,
) -> str | None:
    per_run = [pick(r) for r in runs]
    groups = sorted({g for rates in per_run for g in rates})
    if not groups:
        return None
    worst = {g: min((rates[g].value or 0.0) for rates in per_run if g in rates) for g in groups}
    groups = sorted(groups, key=lambda g: (worst[g], g))[:MAX_ROWS][::-1]
    n = len(runs)
    height = 0.8 / n
    size = (6.2, 1.0 + 0.24 * len(groups) * max(1, n * 0.7))

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        y = np.arange(len(groups))
        for i, (run, rates) in enumerate(zip(runs, per_run, strict=True)):
            present = [g for g in groups if g in rates and rates[g].value is not None]
            if not present:
                continue
            rows = y[[groups.index(g) for g in present]] + ((n - 1) / 2 - i) * height
            values = [rates[g].value or 0.0 for g in present]
            ax.barh(
                rows,
                values,
                height=height * 0.9,
                xerr=_errors([rates[g] for g in present]),
                color=PALETTE[i % len(PALETTE)],
                error_kw={"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"},
                label=label(run.label),
            )
        if target is not None:
            ax.axvline(target, color="#888888", linestyle="--", linewidth=1)
            ax.text(
                target, len(groups) - 0.4, f"target {100 * target:.0f}%", fontsize=7, ha="right"
            )
        ax.set_yticks(y, [label(g) for g in groups])
        ax.set_xlim(0, 1.0)
        ax.xaxis.set_major_formatter(percent_formatter())
        ax.set_xlabel(xlabel)
        ax.set_title(title, loc="left")
        if n > 1:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)

    return render_svg(name, size, draw)


def category_chart(runs: Sequence[RunSection], *, name: str = "categories") -> str | None:
    """Block rate per attack category with 95% interval error bars (worst at the top)."""

    def pick(r: RunSection) -> dict[str, Rate]:
        return {
            g.group: g.block_rate
            for g in r.summary.breakdowns.by.get("category", ())
            if g.confusion.n_attacks > 0
        }

    target = runs[0].summary.settings.coverage_target if runs else None
    return _bar_chart(
        name,
        runs,
        pick=pick,
        xlabel="block rate (attacks stopped), 95% interval",
        target=target,
        title="Block rate per attack category",
    )


def fpr_chart(runs: Sequence[RunSection], *, name: str = "fpr") -> str | None:
    """False positive rate per benign category with 95% interval error bars."""

    def pick(r: RunSection) -> dict[str, Rate]:
        return {
            g.group: g.false_positive_rate
            for g in r.summary.breakdowns.by.get("category", ())
            if g.confusion.n_benign > 0
        }

    return _bar_chart(
        name,
        runs,
        pick=lambda r: {g: _flip(x) for g, x in pick(r).items()},
        xlabel="benign texts let through (1 − FPR), 95% interval",
        target=None,
        title="Benign traffic allowed per category",
    )


def _flip(r: Rate) -> Rate:
    value = None if r.value is None else 1.0 - r.value
    return Rate(r.n - r.k, r.n, value, 1.0 - r.ci_high, 1.0 - r.ci_low, r.method, r.confidence)


def heatmap_chart(runs: Sequence[RunSection], *, name: str = "heatmap") -> str | None:
    """Defenses x attack categories, block rate in each cell (needs two or more runs)."""
    if len(runs) < 2:
        return None
    tables = [
        {g.group: g.block_rate for g in r.summary.breakdowns.by.get("category", ())} for r in runs
    ]
    cats = sorted({c for t in tables for c, v in t.items() if v.value is not None})[:MAX_ROWS]
    if not cats:
        return None
    grid = np.array(
        [
            [t[c].value if c in t and t[c].value is not None else np.nan for c in cats]
            for t in tables
        ]
    )
    size = (min(12.0, 3.6 + 0.4 * len(cats)), 1.8 + 0.4 * len(runs))

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        ax.grid(False)
        image = ax.imshow(grid, vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
        for (i, j), v in np.ndenumerate(grid):
            if not math.isnan(v):
                ax.text(j, i, f"{100 * v:.0f}", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(cats)), [label(c, 24) for c in cats], rotation=45, ha="right")
        ax.set_yticks(range(len(runs)), [label(r.label, 32) for r in runs])
        ax.set_title("Block rate (%) per defense and attack category", loc="left", fontsize=9)
        fig.colorbar(image, ax=ax, fraction=0.03, format=percent_formatter())

    return render_svg(name, size, draw)


def roc_chart(runs: Sequence[RunSection], *, name: str = "roc") -> str | None:
    """ROC curves of the runs that have scores, AUC in the legend."""
    scored = [r for r in runs if r.curves is not None]
    if not scored:
        return None

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1], color="#bbbbbb", linestyle=":", linewidth=1)
        for i, r in enumerate(scored):
            assert r.curves is not None
            auc = r.summary.scores.roc_auc.value if r.summary.scores is not None else None
            tag = "" if auc is None else f" (AUC {auc:.3f})"
            ax.plot(
                r.curves.roc.fpr,
                r.curves.roc.tpr,
                color=PALETTE[i % len(PALETTE)],
                label=label(r.label, 36) + tag,
                linewidth=1.4,
            )
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("block rate (true positive rate)")
        ax.set_title("ROC curve", loc="left")
        ax.legend(loc="lower right", fontsize=7)

    return render_svg(name, (4.6, 4.0), draw)


def pr_chart(runs: Sequence[RunSection], *, name: str = "pr") -> str | None:
    """Precision-recall curves of the runs that have scores, PR-AUC in the legend."""
    scored = [r for r in runs if r.curves is not None]
    if not scored:
        return None

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        for i, r in enumerate(scored):
            assert r.curves is not None
            ap = r.summary.scores.pr_auc.value if r.summary.scores is not None else None
            tag = "" if ap is None else f" (AP {ap:.3f})"
            ax.step(
                r.curves.pr.recall,
                r.curves.pr.precision,
                where="post",
                color=PALETTE[i % len(PALETTE)],
                label=label(r.label, 36) + tag,
                linewidth=1.4,
            )
        ax.set_xlabel("recall (block rate)")
        ax.set_ylabel("precision")
        ax.set_ylim(0, 1.02)
        ax.set_title("Precision-recall curve", loc="left")
        ax.legend(loc="lower left", fontsize=7)

    return render_svg(name, (4.6, 4.0), draw)


def tradeoff_chart(run: RunSection, *, name: str = "tradeoff") -> str | None:
    """Security (block rate) and utility (benign allowed) against the threshold, with
    95% bands and the operating point the trade-off policy chose."""
    if run.curves is None:
        return None
    t = run.curves.tradeoff
    points = [p for p in t.points if math.isfinite(p.threshold)]
    if len(points) < 2:
        return None
    x = np.array([p.threshold for p in points])
    block = [p.block_rate for p in points]
    allowed = [_flip(p.false_positive_rate) for p in points]

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        for rates, colour, what in (
            (block, PALETTE[0], "block rate (security)"),
            (allowed, PALETTE[2], "benign allowed (utility)"),
        ):
            ax.plot(x, [r.value or 0.0 for r in rates], color=colour, label=what, linewidth=1.4)
            ax.fill_between(
                x,
                [r.ci_low for r in rates],
                [r.ci_high for r in rates],
                color=colour,
                alpha=0.15,
                linewidth=0,
            )
        if t.chosen is not None and math.isfinite(t.chosen.threshold):
            c = t.chosen
            ax.axvline(c.threshold, color="#555555", linestyle="--", linewidth=1)
            ax.plot([c.threshold], [c.block_rate.value or 0.0], "o", color=PALETTE[0])
            ax.plot(
                [c.threshold], [1.0 - (c.false_positive_rate.value or 0.0)], "o", color=PALETTE[2]
            )
            ax.annotate(
                f"chosen: {c.threshold:.3g}",
                (c.threshold, 0.05),
                fontsize=7,
                xytext=(4, 0),
                textcoords="offset points",
            )
        ax.set_ylim(0, 1.02)
        ax.yaxis.set_major_formatter(percent_formatter())
        ax.set_xlabel("score threshold (block when score ≥ threshold)")
        ax.set_title(label(f"{run.label}: {t.policy}", 80), loc="left", fontsize=8)
        ax.legend(loc="center left", fontsize=7)

    return render_svg(name, (5.2, 3.4), draw)


def latency_chart(runs: Sequence[RunSection], *, name: str = "latency") -> str | None:
    """Latency distribution per defense (share of calls per bin), p50 and p99 marked."""
    shown = [r for r in runs if r.latency_histogram is not None]
    if not shown:
        return None
    log = any(r.latency_histogram is not None and r.latency_histogram.scale == "log" for r in shown)

    def draw(fig: Figure) -> None:
        ax = fig.subplots()
        for i, r in enumerate(shown):
            h = r.latency_histogram
            assert h is not None
            colour = PALETTE[i % len(PALETTE)]
            total = max(1, sum(h.counts))
            shares = [c / total for c in h.counts]
            ax.stairs(shares, h.edges_ms, color=colour, label=label(r.label, 36), linewidth=1.4)
            lat = r.summary.operations.latency
            for q, style in ((lat.p50.value, "-"), (lat.p99.value, ":")):
                if q is not None and (q > 0 or not log):
                    ax.axvline(q, color=colour, linestyle=style, linewidth=0.9, alpha=0.8)
        if log:
            plain_log_xaxis(ax)
        ax.yaxis.set_major_formatter(percent_formatter())
        ax.set_xlabel("latency (ms); solid line p50, dotted line p99")
        ax.set_ylabel("share of calls")
        ax.set_title("Latency distribution", loc="left")
        ax.legend(fontsize=7)

    return render_svg(name, (6.4, 3.2), draw)
