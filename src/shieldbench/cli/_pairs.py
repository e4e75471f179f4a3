"""The cells of the comparison tables: rates, estimates, p-values, pairwise rows.

Shared by ``compare`` / ``run`` (:mod:`shieldbench.cli._stats`), by the grouped
comparison (:mod:`shieldbench.cli._groups`) and by ``calibrate``; kept apart so that
those modules import it and not one another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from shieldbench.metrics import Estimate, PairedMetric, Rate

__all__ = [
    "PAIR_COLUMNS",
    "format_estimate",
    "format_p",
    "format_rate",
    "metric_row",
    "pairs_table",
    "short_verdict",
]


def format_rate(r: Rate, *, n: bool = True) -> str:
    """``91.2% [88.0–93.6] n=250``; ``–`` with the n for an undefined rate."""
    if r.value is None:
        return f"– n={r.n}" if n else "–"
    text = f"{100 * r.value:.1f}% [{100 * r.ci_low:.1f}–{100 * r.ci_high:.1f}]"
    return f"{text} n={r.n}" if n else text


def format_estimate(e: Estimate | None, *, digits: int = 3, unit: str = "") -> str:
    """``0.912 [0.880–0.936]``; open bounds print as ``?``; ``–`` when undefined."""
    if e is None or e.value is None:
        return "–"

    def f(x: float | None) -> str:
        return "?" if x is None else f"{x:.{digits}f}"

    return f"{f(e.value)}{unit} [{f(e.ci_low)}–{f(e.ci_high)}]"


def format_p(p: float) -> str:
    """A p-value in four decimals, ``<0.0001`` below that."""
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


# Terminal cells are narrow: the reports spell these out in full.
_SHORT_VERDICT = {
    "significantly better": "[green]better[/]",
    "significantly worse": "[red]worse[/]",
    "no significant difference": "n.s.",
}
_SHORT_METRIC = {"block_rate": "TPR", "false_positive_rate": "FPR", "roc_auc": "ROC-AUC"}
_SHORT_TEST = {"exact-binomial": "exact", "chi2-continuity": "chi2 cc"}


def short_verdict(verdict: str) -> str:
    """A verdict short enough for a terminal cell."""
    return _SHORT_VERDICT.get(verdict, escape(verdict))


def metric_row(a: str, b: str, m: PairedMetric, verdict: str, p_adj: float) -> list[str | Text]:
    """The cells of one metric of one pair, in the order of :data:`PAIR_COLUMNS`."""
    d = m.difference
    diff = (
        "–"
        if d.estimate is None
        else f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"
    )
    tb = m.table
    return [
        Text(a),
        Text(b),
        _SHORT_METRIC.get(m.metric, m.metric.replace("_", " ")),
        format_rate(m.rate_a, n=False),
        format_rate(m.rate_b, n=False),
        diff,
        f"{tb.both}/{tb.only_a}/{tb.only_b}/{tb.neither}",
        _SHORT_TEST.get(m.test.method, m.test.method),
        format_p(m.test.p_value),
        format_p(p_adj),
        short_verdict(verdict),
    ]


PAIR_COLUMNS = (
    "a",
    "b",
    "metric",
    "a",
    "b",
    "a - b (points) [CI]",
    "both/only a/only b/neither",
    "test",
    "p",
    "p adj.",
    "a is",
)
"""Columns of a pairwise table, the order :func:`metric_row` fills them in."""


def pairs_table(title: str, *, first: str | None = None) -> Table:
    """An empty pairwise table, with a leading ``first`` column (e.g. the group) if given."""
    t = Table(title=title)
    for name in (first, *PAIR_COLUMNS) if first else PAIR_COLUMNS:
        t.add_column(name, no_wrap=name in {"metric", "test", "a is"})
    return t
