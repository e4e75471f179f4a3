"""What the HTML view shows when there are many defenses: short ids, sparkline
interval bars, defense columns split into groups, and the per-category matrix of
paired comparisons.

Everything here returns plain values (strings, numbers, small records) for the
template, which escapes them; the only markup is :func:`spark`, built from numbers
we computed (never from data).

Example:
    >>> column_chunks(["pattern", "a-very-long-python:package.module:factory-name"] * 3)
    [range(0, 3), range(3, 6)]
    >>> scale_end([0.004, 0.031])
    0.05
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

from shieldbench.metrics import (
    Comparison,
    GroupedComparisons,
    MetricVerdict,
    PairComparison,
    PairedMetric,
    Rate,
)
from shieldbench.reports._format import DASH, ms, p_text, pct, rate_text
from shieldbench.reports._layout import fit_columns, word_px
from shieldbench.reports._model import RunSection
from shieldbench.reports._ticks import nice_end

__all__ = [
    "CARDS_UP_TO",
    "COMPACT_RATES",
    "CompactRow",
    "MatrixCell",
    "MatrixView",
    "column_chunks",
    "compact_rows",
    "matrix_view",
    "pairs_view",
    "scale_end",
    "spark",
]

CARDS_UP_TO = 3  # summary cards for up to this many runs, a compact table beyond
COLUMN_BUDGET_PX = 1000.0  # room for defense columns in a 1280 px window
MIN_COLUMN_PX = 130.0  # a rate with its interval, wrapped between words
CHAR_PX = 8.0  # a bold 13 px character, generously


def column_chunks(labels: Sequence[str], *, budget: float = COLUMN_BUDGET_PX) -> list[range]:
    """Split defense columns (headed by ``labels``) into tables that fit ``budget``
    pixels: a column needs its header's longest word or :data:`MIN_COLUMN_PX`."""
    widths = [max(MIN_COLUMN_PX, word_px(lab, char_px=CHAR_PX, padding=16)) for lab in labels]
    return fit_columns(widths, budget=budget)


def scale_end(values: Sequence[float]) -> float:
    """The end of a sparkline scale: 1, 2 or 5 times a power of ten at or above every
    value (at least 1%, at most 100%)."""
    return nice_end(max([0.01, *values]))


def spark(r: Rate, end: float) -> Markup:
    """A sparkline-sized bar: the 95% interval as a band, the estimate as a tick, on
    a 0..``end`` scale (numbers only: safe markup)."""
    if r.value is None:
        return Markup('<span class="spark" aria-hidden="true"></span>')

    def at(x: float) -> float:
        return round(100 * min(1.0, max(0.0, x / end)), 1)

    low, high = at(r.ci_low), at(r.ci_high)
    return Markup(
        '<span class="spark" aria-hidden="true">'
        f'<span class="band" style="left:{low}%;width:{max(0.8, high - low):.1f}%"></span>'
        f'<span class="tick" style="left:{at(r.value)}%"></span></span>'
    )


@dataclass(frozen=True, slots=True)
class CompactRow:
    """One defense in the compact summary table."""

    label: str
    cells: tuple[tuple[Markup, str, str], ...]  # (spark, value, interval) per rate
    p50: str
    p99: str
    errors: int


@dataclass(frozen=True, slots=True)
class MatrixCell:
    """One (pair, group, metric) of the per-category matrix."""

    metric: str
    text: str
    verdict: str
    css: str
    glyph: str
    title: str


@dataclass(frozen=True, slots=True)
class MatrixView:
    """Rows of pairs x columns of groups; each cell holds one or two metrics."""

    groups: tuple[tuple[str, str], ...]  # (group, which metrics: "block rate" / "FPR" / both)
    rows: tuple[tuple[str, str, tuple[tuple[MatrixCell, ...], ...]], ...]
    significant: int
    tests: int
    alpha: float
    correction: str


_METRIC_NAMES = {"block_rate": "block rate", "false_positive_rate": "FPR"}


def _verdict_cell(name: str, text: str, v: MetricVerdict, title: str) -> MatrixCell:
    better = v.verdict == "significantly better"
    worse = v.verdict == "significantly worse"
    return MatrixCell(
        name,
        text,
        v.verdict,
        "good" if better else "bad" if worse else "ns",
        "▲" if better else "▼" if worse else "",
        f"{title}; p {p_text(v.p_value)}, adjusted {p_text(v.p_adjusted)}: {v.verdict}",
    )


def _cell(
    a: str, b: str, m: PairedMetric, verdicts: Sequence[MetricVerdict], where: str
) -> MatrixCell:
    v = next(v for v in verdicts if v.metric == m.metric)
    d = m.difference
    text = (
        DASH
        if d.estimate is None
        else f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"
    )
    name = _METRIC_NAMES.get(m.metric, m.metric)
    title = (
        f"{where}{name}: {a} {rate_text(m.rate_a, n=False)} vs {b}"
        f" {rate_text(m.rate_b, n=False)}; a − b {text} points; only a {m.table.only_a},"
        f" only b {m.table.only_b}; {m.test.method}"
    )
    return _verdict_cell(name, text, v, title)


def _auc_cell(pair: PairComparison) -> MatrixCell | None:
    auc = pair.auc
    v = next((v for v in pair.verdicts if v.metric == "roc_auc"), None)
    if auc is None or auc.difference is None or v is None:
        return None
    text = f"{auc.difference:+.3f} [{auc.ci_low:+.3f}, {auc.ci_high:+.3f}]"
    title = f"ROC-AUC: {pair.a} vs {pair.b}; a − b {text}; DeLong (paired)"
    return _verdict_cell("ROC-AUC", text, v, title)


def pairs_view(cmp: Comparison) -> MatrixView:
    """The pairwise verdicts as a pair x metric matrix (differences in points for the
    rates, in AUC units for ROC-AUC)."""
    has_auc = any(_auc_cell(p) is not None for p in cmp.pairs)
    columns = [("Block rate", "a − b, points"), ("FPR", "a − b, points")]
    if has_auc:
        columns.append(("ROC-AUC", "a − b"))
    rows = []
    significant = 0
    for p in cmp.pairs:
        cells: list[tuple[MatrixCell, ...]] = [
            (_cell(p.a, p.b, m, p.verdicts, ""),) if m.table.n else ()
            for m in (p.attacks, p.benign)
        ]
        if has_auc:
            auc = _auc_cell(p)
            cells.append(() if auc is None else (auc,))
        significant += sum(c.css != "ns" for cell in cells for c in cell)
        rows.append((p.a, p.b, tuple(cells)))
    tests = sum(len(p.verdicts) for p in cmp.pairs)
    s = cmp.settings
    return MatrixView(tuple(columns), tuple(rows), significant, tests, s.alpha, s.correction)


def matrix_view(grouped: GroupedComparisons) -> MatrixView:
    """The per-category comparisons as a pair x group matrix; metrics without
    samples in a group (the FPR of an attack-only category) are left out."""
    groups = grouped.groups
    has: dict[str, set[str]] = {g: set() for g in groups}
    for _, _, g in grouped.rows:
        for m in (g.attacks, g.benign):
            if m.table.n:
                has[g.group].add(m.metric)
    columns = tuple(
        (
            g,
            " & ".join(
                _METRIC_NAMES[m] for m in ("block_rate", "false_positive_rate") if m in has[g]
            ),
        )
        for g in groups
        if has[g]
    )
    rows = []
    significant = 0
    for a, b in grouped.pairs:
        cells = []
        for group, _ in columns:
            found = grouped.get(a, b, group)
            row = (
                ()
                if found is None
                else tuple(
                    _cell(a, b, m, found.verdicts, f"{group}, ")
                    for m in (found.attacks, found.benign)
                    if m.table.n
                )
            )
            significant += sum(c.css != "ns" for c in row)
            cells.append(row)
        rows.append((a, b, tuple(cells)))
    return MatrixView(
        columns, tuple(rows), significant, grouped.tests, grouped.alpha, grouped.correction
    )


COMPACT_RATES = (
    ("Attack success rate", "attack_success_rate"),
    ("Block rate (TPR)", "block_rate"),
    ("False positive rate", "false_positive_rate"),
)


def compact_rows(runs: Sequence[RunSection]) -> tuple[list[tuple[str, float]], list[CompactRow]]:
    """The compact summary: ``(rate name, scale end)`` headers and one row per run."""
    heads = []
    per_rate: list[list[Rate]] = []
    for title, attr in COMPACT_RATES:
        rates = [getattr(r.summary.rates, attr) for r in runs]
        per_rate.append(rates)
        heads.append((title, scale_end([x.ci_high for x in rates if x.value is not None])))
    rows = []
    for i, r in enumerate(runs):
        cells = []
        for (_, end), rates in zip(heads, per_rate, strict=True):
            x = rates[i]
            interval = "" if x.value is None else f"[{100 * x.ci_low:.1f}–{100 * x.ci_high:.1f}]"
            cells.append((spark(x, end), pct(x.value), interval))
        lat = r.summary.operations.latency
        rows.append(
            CompactRow(r.label, tuple(cells), ms(lat.p50.value), ms(lat.p99.value), r.errors.total)
        )
    return heads, rows
