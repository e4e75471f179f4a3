"""Metrics and statistics over runs: rates with intervals, paired tests, curves.

Start with :func:`summarize` (every figure of one run) and :func:`compare_runs`
(leaderboard and pairwise significance of several runs on the same data);
:func:`verdict_flips` lists the samples whose verdict differs between two runs. The
building blocks are public too, in scikit-learn style: plain functions over a
:class:`~shieldbench.types.Run` or over aligned arrays, returning frozen dataclasses
with ``to_dict()``.

Every number comes with its uncertainty: rates carry Wilson intervals by default
(Clopper-Pearson, Jeffreys, Agresti-Coull on request); statistics with no closed form
carry seeded bootstrap intervals; comparisons are paired tests with family-wise
correction. Undefined cases (no attacks, nothing blocked, zero discordant pairs) have
a documented answer: value ``None`` and the statistic's whole range as interval, or a
p-value of 1.0.

Example:
    >>> from shieldbench.metrics import rate, required_sample_size
    >>> r = rate(9, 10)
    >>> r.value, round(r.ci_low, 3), round(r.ci_high, 3)
    (0.9, 0.596, 0.982)
    >>> required_sample_size(margin=0.05, rate=0.1)
    141
"""

from __future__ import annotations

from shieldbench.metrics._breakdown import (
    DIMENSIONS,
    Coverage,
    Dimension,
    GroupRates,
    breakdown,
    coverage,
)
from shieldbench.metrics._columnar import columnar, latencies, latency_blocks
from shieldbench.metrics._compare import (
    Comparison,
    ComparisonSettings,
    LeaderboardEntry,
    NonInferiorityResult,
    PairComparison,
    compare_runs,
)
from shieldbench.metrics._confusion import (
    Confusion,
    DetectionRates,
    confusion,
    confusion_from_arrays,
    detection_rates,
    effective_blocked,
)
from shieldbench.metrics._curves import (
    AucComparison,
    PrecisionRecallCurve,
    RocCurve,
    compare_auc,
    has_scores,
    precision_recall_curve,
    roc_auc,
    roc_curve,
    score_arrays,
)
from shieldbench.metrics._drift import DriftFigure, ProfileDrift, profile_drift
from shieldbench.metrics._e2e import (
    CorrectedRate,
    EndToEndPair,
    EndToEndSummary,
    FunnelRow,
    JudgeAgreement,
    compare_end_to_end,
    corrected_success_rate,
    end_to_end_summary,
    has_end_to_end,
    rogan_gladen,
)
from shieldbench.metrics._flips import (
    FLIP_KINDS,
    FlipKind,
    SampleFlip,
    VerdictFlips,
    verdict_flips,
)
from shieldbench.metrics._grouped import GroupedComparisons, compare_pairs_by_group
from shieldbench.metrics._intervals import (
    BOOTSTRAP_METHODS,
    INTERVAL_METHODS,
    BootstrapMethod,
    Estimate,
    IntervalMethod,
    Rate,
    bootstrap_interval,
    missing_bound_reason,
    proportion_interval,
    quantile_bound_n,
    quantile_interval,
    rate,
)
from shieldbench.metrics._operations import (
    ErrorCounts,
    LatencyStats,
    Throughput,
    error_counts,
    latency_stats,
    throughput,
)
from shieldbench.metrics._paired import (
    EXACT_BELOW,
    Correction,
    McNemarResult,
    NonInferiority,
    PairedDifference,
    PairedTable,
    adjust_p_values,
    mcnemar_test,
    non_inferiority_test,
    paired_difference,
    tango_interval,
)
from shieldbench.metrics._pairing import (
    GroupComparison,
    MetricVerdict,
    PairedMetric,
    compare_groups,
    paired_tables,
    shared_policy,
)
from shieldbench.metrics._planning import required_sample_size, wilson_half_width
from shieldbench.metrics._precision import average_precision
from shieldbench.metrics._score_counts import (
    DISTINCT_LIMIT,
    ScoreCounts,
    counts_of_blocks,
    precision_recall_curve_counts,
    roc_curve_counts,
    score_counts,
)
from shieldbench.metrics._sketch_bounds import SketchBounds
from shieldbench.metrics._summary import (
    Breakdowns,
    Operations,
    RunSummary,
    ScoreSummary,
    SummarySettings,
    score_summary,
    summarize,
)
from shieldbench.metrics._thresholds import (
    OperatingPoint,
    ThresholdCalibration,
    calibrate_threshold,
    fpr_at_tpr,
    operating_point,
    threshold_sweep,
    tpr_at_fpr,
)
from shieldbench.metrics._tradeoff import (
    TradeOff,
    security_utility_tradeoff,
    security_utility_tradeoff_counts,
)

__all__ = [
    "BOOTSTRAP_METHODS",
    "DIMENSIONS",
    "DISTINCT_LIMIT",
    "EXACT_BELOW",
    "FLIP_KINDS",
    "INTERVAL_METHODS",
    "AucComparison",
    "BootstrapMethod",
    "Breakdowns",
    "Comparison",
    "ComparisonSettings",
    "Confusion",
    "CorrectedRate",
    "Correction",
    "Coverage",
    "DetectionRates",
    "Dimension",
    "DriftFigure",
    "EndToEndPair",
    "EndToEndSummary",
    "ErrorCounts",
    "Estimate",
    "FlipKind",
    "FunnelRow",
    "GroupComparison",
    "GroupRates",
    "GroupedComparisons",
    "IntervalMethod",
    "JudgeAgreement",
    "LatencyStats",
    "LeaderboardEntry",
    "McNemarResult",
    "MetricVerdict",
    "NonInferiority",
    "NonInferiorityResult",
    "OperatingPoint",
    "Operations",
    "PairComparison",
    "PairedDifference",
    "PairedMetric",
    "PairedTable",
    "PrecisionRecallCurve",
    "ProfileDrift",
    "Rate",
    "RocCurve",
    "RunSummary",
    "SampleFlip",
    "ScoreCounts",
    "ScoreSummary",
    "SketchBounds",
    "SummarySettings",
    "ThresholdCalibration",
    "Throughput",
    "TradeOff",
    "VerdictFlips",
    "adjust_p_values",
    "average_precision",
    "bootstrap_interval",
    "breakdown",
    "calibrate_threshold",
    "columnar",
    "compare_auc",
    "compare_end_to_end",
    "compare_groups",
    "compare_pairs_by_group",
    "compare_runs",
    "confusion",
    "confusion_from_arrays",
    "corrected_success_rate",
    "counts_of_blocks",
    "coverage",
    "detection_rates",
    "effective_blocked",
    "end_to_end_summary",
    "error_counts",
    "fpr_at_tpr",
    "has_end_to_end",
    "has_scores",
    "latencies",
    "latency_blocks",
    "latency_stats",
    "mcnemar_test",
    "missing_bound_reason",
    "non_inferiority_test",
    "operating_point",
    "paired_difference",
    "paired_tables",
    "precision_recall_curve",
    "precision_recall_curve_counts",
    "profile_drift",
    "proportion_interval",
    "quantile_bound_n",
    "quantile_interval",
    "rate",
    "required_sample_size",
    "roc_auc",
    "roc_curve",
    "roc_curve_counts",
    "rogan_gladen",
    "score_arrays",
    "score_counts",
    "score_summary",
    "security_utility_tradeoff",
    "security_utility_tradeoff_counts",
    "shared_policy",
    "summarize",
    "tango_interval",
    "threshold_sweep",
    "throughput",
    "tpr_at_fpr",
    "verdict_flips",
    "wilson_half_width",
]
