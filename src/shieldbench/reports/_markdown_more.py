"""Markdown sections for comparisons (see :mod:`._markdown`; the adaptive attack is in
:mod:`._markdown_attack`)."""

from __future__ import annotations

from shieldbench.metrics import PairedMetric
from shieldbench.reports._format import DASH, est_text, p_text, quantile_text, rate_text
from shieldbench.reports._markdown_wide import category_matrix, fit_table, pairs_matrix
from shieldbench.reports._mdescape import Md, md_table, md_text
from shieldbench.reports._model import DatasetGroup

__all__ = ["comparison_markdown", "paired_difference_text"]


def paired_difference_text(m: PairedMetric) -> str:
    """``a - b`` in percentage points with its paired interval."""
    d = m.difference
    if d.estimate is None:
        return DASH
    return f"{100 * d.estimate:+.1f} [{100 * d.ci_low:+.1f}, {100 * d.ci_high:+.1f}]"


def comparison_markdown(group: DatasetGroup) -> list[str]:
    """Leaderboard, pairwise verdicts and non-inferiority of one dataset group."""
    title = f"## Comparison on {md_text(group.dataset.spec)}"
    if group.comparison is None:
        if group.comparison_note is None:
            return []
        return ["", title, "", md_text(group.comparison_note)]
    cmp = group.comparison
    s = cmp.settings
    board: list[list[str | Md]] = []
    for e in cmp.leaderboard:
        r = e.summary.rates
        sc = e.summary.scores
        board.append(
            [
                Md(str(e.rank)),
                e.label,
                Md(rate_text(r.block_rate)),
                Md(rate_text(r.false_positive_rate)),
                Md(est_text(r.balanced_accuracy)),
                Md(DASH if sc is None else est_text(sc.roc_auc)),
                Md(quantile_text(e.summary.operations.latency.p50, 0.5)),
            ]
        )
    lines = [
        "",
        title,
        "",
        f"Content hash {md_text(cmp.content_hash)}; error policy {md_text(s.policy)};"
        f" ranked by {md_text(s.rank_by.replace('_', ' '))}. Paired tests on the same samples"
        f" (McNemar: exact below 25 discordant pairs, else chi-square with continuity"
        f" correction; DeLong for ROC-AUC); {md_text(s.correction)} correction over all"
        f' comparisons at alpha {s.alpha:g}. Verdicts read "a is … than b".',
        *fit_table(
            ["#", "Defense", "Block rate", "FPR", "Balanced acc.", "ROC-AUC", "per-call p50 ms"],
            board,
            keep=2,
        ),
        "",
        "Every pair: a − b with its 95% paired interval; bold with ▲ / ▼ where a is"
        " significantly better / worse.",
        *pairs_matrix(cmp),
    ]
    if cmp.non_inferiority:
        rows: list[list[str | Md]] = []
        for row in cmp.non_inferiority:
            res = row.result
            rows.append(
                [
                    row.candidate,
                    row.metric.replace("_", " "),
                    Md(DASH if res.difference is None else f"{100 * res.difference:+.1f} points"),
                    Md(f"{100 * res.bound:+.1f}"),
                    Md(p_text(row.p_adjusted)),
                    Md("**non-inferior**" if row.non_inferior else "not shown non-inferior"),
                ]
            )
        lines += [
            "",
            f"Non-inferiority against the baseline {md_text(cmp.runs[0])}"
            f" (margin {100 * (s.margin or 0):g} points):",
            "",
            md_table(
                ["Candidate", "Metric", "Candidate − baseline", "Bound", "p adj.", "Result"], rows
            ),
        ]
    if group.by_category is not None:
        lines += category_matrix(group.by_category)
    return lines
