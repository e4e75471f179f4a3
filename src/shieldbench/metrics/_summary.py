"""One call for every figure of a run: :func:`summarize` -> :class:`RunSummary`.

The summary is what terminal tables and reports print: the confusion counts under
the error policy, every rate with its interval and ``n``, breakdowns per category,
subcategory, tier, severity and source with coverage, latency / throughput / errors,
and, when every verdict has a score, ROC-AUC (DeLong), PR-AUC (bootstrap), the block
rate at a target FPR and the FPR at a target block rate. ``to_dict()`` gives plain
JSON (no NaN or infinity anywhere: undefined values are ``None``).

Bootstrap intervals (F1, balanced accuracy, MCC, PR-AUC) are percentile intervals,
seeded (``seed``): the same run gives the same summary. F1 / balanced accuracy / MCC
use 2,000 multinomial resamples; PR-AUC uses 1,000 stratified resamples up to 20,000
scored samples and fewer beyond (never under 200).

Bounded memory at any size: counts and breakdowns are counted a block of rows at a
time; the score figures come from counts per distinct score
(:mod:`shieldbench.metrics._score_counts`; the PR-AUC bootstrap draws multinomial
counts per distinct score, the same distribution as resampling the samples); the
latency percentiles from radix selection (:mod:`shieldbench.metrics._order_stats`).
All exact, up to ``distinct_limit`` distinct scores: a run read from disk has the
summary of the same run held in memory. A run with more distinct scores gets its
score figures from a bounded sketch, and ``scores.sketch`` (a
:class:`~shieldbench.metrics.SketchBounds`) states how far each can be from the
exact figure; exact summaries have no ``sketch`` key.

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> run = make_run([("jailbreak", True, True, 0.9), ("jailbreak", True, False, 0.4),
    ...                 ("chat", False, False, 0.1), ("chat", False, True, 0.6)])
    >>> s = summarize(run)
    >>> s.rates.attack_success_rate.value, s.rates.false_positive_rate.value
    (0.5, 0.5)
    >>> s.scores.roc_auc.value
    0.75
    >>> import json; _ = json.dumps(s.to_dict(), allow_nan=False)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shieldbench.errors import StatisticsError
from shieldbench.metrics._breakdown import DIMENSIONS, Coverage, GroupRates, breakdown, coverage
from shieldbench.metrics._confusion import (
    DetectionRates,
    confusion,
    detection_rates,
    resolve_policy,
)
from shieldbench.metrics._count_points import (
    fpr_at_tpr_counts,
    sketch_bounds,
    tpr_at_fpr_counts,
)
from shieldbench.metrics._curves import has_scores
from shieldbench.metrics._intervals import (
    INTERVAL_METHODS,
    Estimate,
    IntervalMethod,
    _check_confidence,
)
from shieldbench.metrics._operations import (
    ErrorCounts,
    LatencyStats,
    Throughput,
    error_counts,
    latency_stats,
    throughput,
)
from shieldbench.metrics._score_bins import check_limit
from shieldbench.metrics._score_counts import (
    DISTINCT_LIMIT,
    average_precision_with_range,
    roc_auc_counts,
    score_counts,
)
from shieldbench.metrics._sketch_bounds import SketchBounds
from shieldbench.metrics._thresholds import OperatingPoint
from shieldbench.types import DatasetInfo, DefenseInfo, ErrorPolicy, Run

__all__ = [
    "Breakdowns",
    "Operations",
    "RunSummary",
    "ScoreSummary",
    "SummarySettings",
    "score_summary",
    "summarize",
]

_COUNT_RESAMPLES = 2000


@dataclass(frozen=True, slots=True)
class SummarySettings:
    """How a summary was computed (reported with it)."""

    confidence: float
    method: str
    policy: str
    coverage_target: float
    target_fpr: float
    target_tpr: float
    seed: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "confidence": self.confidence,
            "interval_method": self.method,
            "error_policy": self.policy,
            "coverage_target": self.coverage_target,
            "target_fpr": self.target_fpr,
            "target_tpr": self.target_tpr,
            "seed": self.seed,
            "bootstrap": "percentile",
        }


@dataclass(frozen=True, slots=True)
class Breakdowns:
    """Per-group rates for each sample field that any sample sets, and coverage of
    the attack categories."""

    by: Mapping[str, tuple[GroupRates, ...]]
    coverage: Coverage

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": {dim: [g.to_dict() for g in groups] for dim, groups in self.by.items()},
            "coverage": self.coverage.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Operations:
    """Latency, throughput and errors."""

    latency: LatencyStats
    throughput: Throughput
    errors: ErrorCounts

    def to_dict(self) -> dict[str, Any]:
        return {
            "latency": self.latency.to_dict(),
            "throughput": self.throughput.to_dict(),
            "errors": self.errors.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ScoreSummary:
    """Threshold-free quality (AUCs) and two standard operating points.

    ``tpr_at_fpr`` is the best block rate with FPR <= ``target_fpr``; ``fpr_at_tpr``
    the lowest FPR with block rate >= ``target_tpr``; each ``None`` when no observed
    threshold qualifies or a class is missing. ``sketch`` is ``None`` when every figure
    is exact, else the stated error of each (more distinct scores than the limit).
    """

    n: int
    roc_auc: Estimate
    pr_auc: Estimate
    target_fpr: float
    tpr_at_fpr: OperatingPoint | None
    target_tpr: float
    fpr_at_tpr: OperatingPoint | None
    sketch: SketchBounds | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.n,
            "roc_auc": self.roc_auc.to_dict(),
            "pr_auc": self.pr_auc.to_dict(),
            "target_fpr": self.target_fpr,
            "tpr_at_fpr": None if self.tpr_at_fpr is None else self.tpr_at_fpr.to_dict(),
            "target_tpr": self.target_tpr,
            "fpr_at_tpr": None if self.fpr_at_tpr is None else self.fpr_at_tpr.to_dict(),
        }
        if self.sketch is not None:
            out["sketch"] = self.sketch.to_dict()
        return out


def _pr_resamples(n: int) -> int:
    return max(200, min(1000, 20_000_000 // max(n, 1)))


def score_summary(
    run: Run,
    *,
    policy: ErrorPolicy | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    target_fpr: float = 0.01,
    target_tpr: float = 0.9,
    seed: int = 0,
    distinct_limit: int = DISTINCT_LIMIT,
) -> ScoreSummary | None:
    """The score figures of ``run``; ``None`` unless every verdict carries a score.

    Exact up to ``distinct_limit`` distinct scores; past it, from a sketch of at most
    that many bins, with the stated errors in ``sketch``.
    """
    if not has_scores(run):
        return None
    counts = score_counts(run, policy=policy, distinct_limit=distinct_limit)
    m, n = counts.m, counts.n
    at_fpr = at_tpr = None
    if n > 0:
        at_fpr = tpr_at_fpr_counts(counts, max_fpr=target_fpr, confidence=confidence, method=method)
    if m > 0:
        at_tpr = fpr_at_tpr_counts(counts, min_tpr=target_tpr, confidence=confidence, method=method)
    pr_auc, ap_range, ap_interval = average_precision_with_range(
        counts, confidence=confidence, n_resamples=_pr_resamples(m + n), seed=seed
    )
    bounds = sketch_bounds(
        counts,
        distinct_limit=distinct_limit,
        confidence=confidence,
        target_fpr=target_fpr,
        target_tpr=target_tpr,
        average_precision_range=ap_range,
        average_precision=pr_auc.value,
        average_precision_interval=ap_interval,
    )
    return ScoreSummary(
        m + n,
        roc_auc_counts(counts, confidence=confidence),
        pr_auc,
        target_fpr,
        at_fpr,
        target_tpr,
        at_tpr,
        bounds,
    )


@dataclass(frozen=True, slots=True)
class RunSummary:
    """Every figure of one run. ``scores`` is ``None`` when the defense gives no scores."""

    run_id: str
    defense: DefenseInfo
    dataset: DatasetInfo
    settings: SummarySettings
    rates: DetectionRates
    breakdowns: Breakdowns
    operations: Operations
    scores: ScoreSummary | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "shieldbench.summary",
            "run_id": self.run_id,
            "defense": self.defense.to_dict(),
            "dataset": self.dataset.to_dict(),
            "settings": self.settings.to_dict(),
            "rates": self.rates.to_dict(),
            "breakdowns": self.breakdowns.to_dict(),
            "operations": self.operations.to_dict(),
            "scores": None if self.scores is None else self.scores.to_dict(),
        }


def summarize(
    run: Run,
    *,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    policy: ErrorPolicy | None = None,
    coverage_target: float = 0.9,
    target_fpr: float = 0.01,
    target_tpr: float = 0.9,
    seed: int = 0,
    distinct_limit: int = DISTINCT_LIMIT,
) -> RunSummary:
    """Summarize ``run``: rates, intervals, breakdowns, operations and score figures.

    ``policy`` overrides the run's own error policy (the default); ``method`` picks
    the interval of every rate; ``coverage_target`` is the block rate an attack
    category must reach to count as covered; ``distinct_limit`` the distinct scores
    up to which the score figures are exact (past it: a sketch with stated errors).
    """
    confidence = _check_confidence(confidence)
    if method not in INTERVAL_METHODS:
        raise StatisticsError(
            f"unknown interval method {method!r}; choose one of {', '.join(INTERVAL_METHODS)}"
        )
    for name, value in (
        ("coverage_target", coverage_target),
        ("target_fpr", target_fpr),
        ("target_tpr", target_tpr),
    ):
        if not 0.0 <= value <= 1.0:
            raise StatisticsError(f"{name} must be in [0, 1], got {value!r}")
    check_limit(distinct_limit)
    chosen = resolve_policy(run, policy)
    settings = SummarySettings(
        confidence, method, chosen, coverage_target, target_fpr, target_tpr, seed
    )
    rates = detection_rates(
        confusion(run, policy=chosen),
        confidence=confidence,
        method=method,
        n_resamples=_COUNT_RESAMPLES,
        seed=seed,
    )
    by: dict[str, tuple[GroupRates, ...]] = {}
    for dim in DIMENSIONS:
        groups = breakdown(run, dim, policy=chosen, confidence=confidence, method=method)
        if groups:
            by[dim] = groups
    cov = coverage(by.get("category", ()), target=coverage_target)
    latency = latency_stats(run, confidence=confidence)
    operations = Operations(latency, throughput(run, latency=latency), error_counts(run))
    scores = score_summary(
        run,
        policy=chosen,
        confidence=confidence,
        method=method,
        target_fpr=target_fpr,
        target_tpr=target_tpr,
        seed=seed,
        distinct_limit=distinct_limit,
    )
    return RunSummary(
        run.id,
        run.defense,
        run.dataset,
        settings,
        rates,
        Breakdowns(by, cov),
        operations,
        scores,
    )
