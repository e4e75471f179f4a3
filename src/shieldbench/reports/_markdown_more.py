"""Markdown sections for comparisons (see :mod:`._markdown`; the adaptive attack is in
:mod:`._markdown_attack`)."""

from __future__ import annotations

from shieldbench.metrics import PairedMetric
from shieldbench.reports._format import DASH, est_text, p_text, rate_text
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
                Md(est_text(e.summary.operations.latency.p50, digits=2)),
            ]
        )
    pairs: list[list[str | Md]] = []
    for pair in cmp.pairs:
        verdicts = {v.metric: v for v in pair.verdicts}
        for m in (pair.attacks, pair.benign):
            v = verdicts[m.metric]
            t = m.table
            pairs.append(
                [
                    pair.a,
                    pair.b,
                    m.metric.replace("_", " "),
                    Md(rate_text(m.rate_a, n=False)),
                    Md(rate_text(m.rate_b, n=False)),
                    Md(paired_difference_text(m)),
                    Md(f"{t.only_a} / {t.only_b}"),
                    m.test.method,
                    Md(p_text(v.p_value)),
                    Md(p_text(v.p_adjusted)),
                    Md(f"**{v.verdict}**" if v.verdict.startswith("signif") else v.verdict),
                ]
            )
        if pair.auc is not None and pair.auc.difference is not None and "roc_auc" in verdicts:
            v = verdicts["roc_auc"]
            pairs.append(
                [
                    pair.a,
                    pair.b,
                    "ROC-AUC",
                    Md(est_text(pair.auc.auc_a, digits=3)),
                    Md(est_text(pair.auc.auc_b, digits=3)),
                    Md(f"{pair.auc.difference:+.3f}"),
                    Md(DASH),
                    "DeLong (paired)",
                    Md(p_text(v.p_value)),
                    Md(p_text(v.p_adjusted)),
                    Md(f"**{v.verdict}**" if v.verdict.startswith("signif") else v.verdict),
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
        "",
        md_table(
            ["#", "Defense", "Block rate", "FPR", "Balanced acc.", "ROC-AUC", "p50 ms"], board
        ),
        "",
        md_table(
            [
                "a",
                "b",
                "Metric",
                "a",
                "b",
                "a − b (points)",
                "Discordant only a / only b",
                "Test",
                "p",
                "p adj.",
                "Verdict",
            ],
            pairs,
        ),
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
    return lines
