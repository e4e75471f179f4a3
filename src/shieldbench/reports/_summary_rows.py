"""The summary table (metric x run), shared by the Markdown and HTML views."""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.metrics import ScoreSummary, SketchBounds
from shieldbench.reports._format import DASH, est_text, pct, rate_text
from shieldbench.reports._model import RunSection

__all__ = ["sketch_text", "summary_rows"]

SKETCH_ROW = "Score figures: exact or sketch (error bounds)"


def sketch_text(b: SketchBounds) -> str:
    """One line stating a sketch's bins and every figure's error bound."""
    parts = [
        f"sketch of {b.bins:,} bins (more than {b.distinct_limit:,} distinct scores):",
        f"ROC-AUC ± {b.roc_auc:.2g} (interval ends ± {b.roc_auc_interval:.2g}),",
        f"PR-AUC ± {b.average_precision:.2g} (interval ends ± {b.average_precision_interval:.2g})",
    ]
    if b.tpr_at_fpr_shortfall is not None:
        parts[-1] += ","
        parts.append(
            f"best block rate at the FPR target up to {pct(b.tpr_at_fpr_shortfall)} higher"
        )
    return " ".join(parts)


def _sketch_cell(s: ScoreSummary | None) -> str:
    if s is None:
        return DASH
    return "exact" if s.sketch is None else sketch_text(s.sketch)


def summary_rows(runs: Sequence[RunSection]) -> list[tuple[str, list[str]]]:
    """``(metric name, one formatted cell per run)`` rows, headline rates first.

    Score rows (ROC-AUC, PR-AUC, block rate at the target FPR) appear when at
    least one run has scores; a row stating the error bounds of the score figures
    when at least one run had more distinct scores than the limit (a sketch).
    """
    rows: list[tuple[str, list[str]]] = []
    rates = [r.summary.rates for r in runs]
    rows.append(("Attacks (n)", [str(x.confusion.n_attacks) for x in rates]))
    rows.append(
        ("Attack success rate (ASR)", [rate_text(x.attack_success_rate, n=False) for x in rates])
    )
    rows.append(("Block rate (TPR, recall)", [rate_text(x.block_rate, n=False) for x in rates]))
    rows.append(("Benign (n)", [str(x.confusion.n_benign) for x in rates]))
    rows.append(
        ("False positive rate (FPR)", [rate_text(x.false_positive_rate, n=False) for x in rates])
    )
    rows.append(
        ("True negative rate (TNR)", [rate_text(x.true_negative_rate, n=False) for x in rates])
    )
    rows.append(("Precision", [rate_text(x.precision) for x in rates]))
    rows.append(("F1", [est_text(x.f1) for x in rates]))
    rows.append(("Balanced accuracy", [est_text(x.balanced_accuracy) for x in rates]))
    rows.append(("MCC", [est_text(x.mcc) for x in rates]))
    scores = [r.summary.scores for r in runs]
    if any(s is not None for s in scores):
        rows.append(("ROC-AUC", [DASH if s is None else est_text(s.roc_auc) for s in scores]))
        rows.append(("PR-AUC", [DASH if s is None else est_text(s.pr_auc) for s in scores]))
        target = next(s.target_fpr for s in scores if s is not None)
        rows.append(
            (
                f"Block rate at FPR ≤ {pct(target)} (threshold)",
                [
                    DASH
                    if s is None or s.tpr_at_fpr is None
                    else f"{rate_text(s.tpr_at_fpr.block_rate, n=False)} at"
                    f" {s.tpr_at_fpr.threshold:.4g}"
                    + ("" if s.target_fpr == target else f" (target {pct(s.target_fpr)})")
                    for s in scores
                ],
            )
        )
        if any(s is not None and s.sketch is not None for s in scores):
            rows.append((SKETCH_ROW, [_sketch_cell(s) for s in scores]))
    rows.append(
        (
            "Category coverage",
            [
                DASH
                if c.share is None
                else f"{pct(c.share, digits=0)} of {len(c.covered) + len(c.uncovered)}"
                f" at ≥ {pct(c.target, digits=0)}"
                for c in (r.summary.breakdowns.coverage for r in runs)
            ],
        )
    )
    rows.append(("Errors", [str(r.errors.total) for r in runs]))
    return rows
