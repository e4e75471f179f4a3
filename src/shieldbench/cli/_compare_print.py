"""A :class:`~shieldbench.metrics.Comparison` as rich tables: the leaderboard (with a
note for each run whose score figures came from a sketch), the pairwise verdicts and
the non-inferiority tests. ``compare`` and ``run`` with several defenses print it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from shieldbench.cli._app import console
from shieldbench.cli._pairs import (
    format_estimate,
    format_p,
    format_rate,
    metric_row,
    pairs_table,
    short_verdict,
)

if TYPE_CHECKING:
    from shieldbench.metrics import Comparison

__all__ = ["print_comparison"]


def _leaderboard_table(cmp: Comparison) -> Table:
    t = Table(title=f"Leaderboard (ranked by {cmp.settings.rank_by.replace('_', ' ')})")
    for name, justify in (
        ("#", "right"),
        ("defense", "left"),
        ("block rate", "right"),
        ("attack success", "right"),
        ("false positives", "right"),
        ("bal. accuracy", "right"),
        ("ROC-AUC", "right"),
        ("per-call p50 ms", "right"),
        ("errors", "right"),
    ):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for e in cmp.leaderboard:
        r = e.summary.rates
        sc = e.summary.scores
        t.add_row(
            str(e.rank),
            Text(e.label),
            format_rate(r.block_rate),
            format_rate(r.attack_success_rate, n=False),
            format_rate(r.false_positive_rate),
            format_estimate(r.balanced_accuracy),
            "–" if sc is None else format_estimate(sc.roc_auc),
            format_estimate(e.summary.operations.latency.p50, digits=2),
            str(e.summary.operations.errors.total),
        )
    return t


def _pairs_table(cmp: Comparison) -> Table:
    s = cmp.settings
    t = pairs_table(f"Pairwise (a vs b; alpha {s.alpha:g}, {s.correction} correction)")
    for pair in cmp.pairs:
        v = {x.metric: x for x in pair.verdicts}
        for m in (pair.attacks, pair.benign):
            t.add_row(*metric_row(pair.a, pair.b, m, v[m.metric].verdict, v[m.metric].p_adjusted))
        if pair.auc is not None and pair.auc.difference is not None:
            auc = pair.auc
            va = v["roc_auc"]
            t.add_row(
                Text(pair.a),
                Text(pair.b),
                "ROC-AUC",
                format_estimate(auc.auc_a),
                format_estimate(auc.auc_b),
                f"{auc.difference:+.3f} [{auc.ci_low:+.3f}, {auc.ci_high:+.3f}]",
                "",
                "DeLong",
                format_p(auc.p_value),
                format_p(va.p_adjusted),
                short_verdict(va.verdict),
            )
    return t


def _ni_table(cmp: Comparison) -> Table:
    t = Table(
        title=Text(f"Non-inferiority vs baseline {cmp.runs[0]!r} (margin {cmp.settings.margin:g})")
    )
    for name in (
        "candidate",
        "metric",
        "candidate - baseline",
        "one-sided bound",
        "p adj.",
        "result",
    ):
        t.add_column(name)
    for row in cmp.non_inferiority:
        res = row.result
        diff = "–" if res.difference is None else f"{100 * res.difference:+.1f} points"
        t.add_row(
            Text(row.candidate),
            row.metric.replace("_", " "),
            diff,
            f"{100 * res.bound:+.1f} ({'lower' if res.higher_is_better else 'upper'})",
            format_p(row.p_adjusted),
            "non-inferior" if row.non_inferior else "not shown non-inferior",
        )
    return t


def print_comparison(cmp: Comparison, *, out: Console | None = None) -> None:
    """Print the leaderboard, the pairwise verdicts and the non-inferiority tests."""
    target = console if out is None else out
    s = cmp.settings
    target.print(
        f"Dataset [bold]{escape(cmp.dataset_spec)}[/] ({cmp.content_hash[:19]}…), error policy"
        f" {s.policy}, {s.confidence:.0%} {s.method} intervals.",
        highlight=False,
    )
    target.print(_leaderboard_table(cmp))
    for e in cmp.leaderboard:
        sketch = None if e.summary.scores is None else e.summary.scores.sketch
        if sketch is not None:
            target.print(
                Text(
                    f"{e.label}: score figures from a sketch of {sketch.bins:,} bins (more than"
                    f" {sketch.distinct_limit:,} distinct scores); ROC-AUC within"
                    f" ±{sketch.roc_auc:.2g} of the exact value (the reports state every bound)."
                )
            )
    target.print(_pairs_table(cmp))
    target.print(
        "TPR / FPR rows: McNemar test on the paired outcomes, exact binomial below 25"
        " discordant pairs, else chi-square with continuity correction (chi2 cc); differences"
        " with Newcombe's paired interval. ROC-AUC rows: paired DeLong test. 'a is better /"
        f" worse': significant after {s.correction} correction; n.s.: no significant"
        " difference (the reports spell every verdict out).",
        highlight=False,
    )
    if cmp.non_inferiority:
        target.print(_ni_table(cmp))
