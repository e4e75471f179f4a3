"""Compare several runs on the same dataset: leaderboard, pairwise tests, verdicts.

:func:`compare_runs` pairs every two runs sample by sample and answers, for each
pair and each metric, "significantly better", "significantly worse" or "no
significant difference", with the p-value. Per-category comparisons of two runs are
:func:`~shieldbench.metrics.compare_groups`.

- Metrics: ``block_rate`` (attacks; McNemar), ``false_positive_rate`` (benign;
  McNemar; lower is better) and ``roc_auc`` (paired DeLong) when both runs have
  scores on every verdict.
- Multiple testing: every p-value of the comparison (all pairs x metrics) forms one
  family, corrected with Holm by default, so "significant" holds at ``alpha``
  family-wise however many defenses are compared. Tests without data (no benign
  samples, say) have p = 1 and stay out of the family.
- Non-inferiority (``margin`` given): ``runs[0]`` is the baseline; every other run
  is tested as a candidate "not worse by more than ``margin``" on block rate and on
  FPR (Tango's score test; this family is corrected separately).
- Same data required: runs whose datasets' content hashes differ are refused with
  :class:`StatisticsError`. Runs of the same defense spec are allowed and labelled
  by version where theirs differ, else by run id. Pairs where either outcome is
  excluded (``exclude`` policy) are left out of that pair's tables. All runs are
  read under one error policy: ``policy``, or their shared recorded policy (mixed
  policies must be overridden explicitly).
- Leaderboard ranking: by balanced accuracy by default (``rank_by``), ties broken
  by block rate then FPR; every entry carries its rates with intervals.

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> rows_a = [("x", True, True)] * 40 + [("y", False, False)] * 40
    >>> rows_b = [("x", True, i % 2 == 0) for i in range(40)] + [("y", False, False)] * 40
    >>> cmp = compare_runs([make_run(rows_a, run_id="a", spec="strong"),
    ...                     make_run(rows_b, run_id="b", spec="weak")])
    >>> [e.label for e in cmp.leaderboard]
    ['strong', 'weak']
    >>> v = cmp.pairs[0].verdicts[0]
    >>> v.metric, v.verdict, v.p_value < 0.001
    ('block_rate', 'significantly better', True)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from shieldbench.errors import StatisticsError
from shieldbench.metrics._curves import AucComparison, compare_auc
from shieldbench.metrics._intervals import INTERVAL_METHODS, IntervalMethod, _check_confidence
from shieldbench.metrics._paired import (
    Correction,
    NonInferiority,
    non_inferiority_test,
)
from shieldbench.metrics._pairing import (
    MetricVerdict,
    PairedMetric,
    aligned_scores,
    check_same_data,
    corrected,
    metric_verdict,
    paired_metric,
    paired_tables,
    rate_verdicts,
    shared_policy,
)
from shieldbench.metrics._summary import RunSummary, summarize
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "Comparison",
    "ComparisonSettings",
    "LeaderboardEntry",
    "NonInferiorityResult",
    "PairComparison",
    "compare_runs",
]

RankBy = Literal["balanced_accuracy", "block_rate", "false_positive_rate", "roc_auc"]


@dataclass(frozen=True, slots=True)
class PairComparison:
    """Everything about one pair ``(a, b)``; verdicts read "a is ... than b"."""

    a: str
    b: str
    attacks: PairedMetric
    benign: PairedMetric
    auc: AucComparison | None
    verdicts: tuple[MetricVerdict, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "attacks": self.attacks.to_dict(),
            "benign": self.benign.to_dict(),
            "auc": None if self.auc is None else self.auc.to_dict(),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


@dataclass(frozen=True, slots=True)
class LeaderboardEntry:
    """One run's place: rank (1 = best by ``rank_by``), label and its summary."""

    rank: int
    label: str
    summary: RunSummary

    def to_dict(self) -> dict[str, Any]:
        r = self.summary.rates
        sc = self.summary.scores
        return {
            "rank": self.rank,
            "label": self.label,
            "run_id": self.summary.run_id,
            "defense": self.summary.defense.to_dict(),
            "block_rate": r.block_rate.to_dict(),
            "attack_success_rate": r.attack_success_rate.to_dict(),
            "false_positive_rate": r.false_positive_rate.to_dict(),
            "balanced_accuracy": r.balanced_accuracy.to_dict(),
            "f1": r.f1.to_dict(),
            "roc_auc": None if sc is None else sc.roc_auc.to_dict(),
            "latency_p50_ms": self.summary.operations.latency.p50.to_dict(),
            "errors": self.summary.operations.errors.total,
            "summary": self.summary.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class NonInferiorityResult:
    """Candidate versus the baseline (``runs[0]``) on one metric, with its corrected p."""

    candidate: str
    baseline: str
    metric: str
    result: NonInferiority
    p_adjusted: float

    @property
    def non_inferior(self) -> bool:
        """Shown at ``alpha`` after the family-wise correction."""
        return self.p_adjusted < self.result.alpha

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "baseline": self.baseline,
            "metric": self.metric,
            **self.result.to_dict(),
            "p_adjusted": self.p_adjusted,
            "non_inferior": self.non_inferior,
        }


@dataclass(frozen=True, slots=True)
class ComparisonSettings:
    """How a comparison was computed."""

    alpha: float
    correction: str
    confidence: float
    method: str
    policy: str
    rank_by: str
    margin: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "correction": self.correction,
            "confidence": self.confidence,
            "interval_method": self.method,
            "error_policy": self.policy,
            "rank_by": self.rank_by,
            "margin": self.margin,
            "mcnemar": "exact binomial below 25 discordant pairs, else chi-square with"
            " continuity correction",
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Leaderboard, every pairwise comparison, and non-inferiority against the baseline.

    ``runs`` lists the run labels in the order given; ``runs[0]`` is the baseline of
    ``non_inferiority`` (empty unless a margin was given).
    """

    dataset_spec: str
    content_hash: str
    settings: ComparisonSettings
    runs: tuple[str, ...]
    leaderboard: tuple[LeaderboardEntry, ...]
    pairs: tuple[PairComparison, ...]
    non_inferiority: tuple[NonInferiorityResult, ...]

    def pair(self, a: str, b: str) -> PairComparison:
        """The comparison of runs labelled ``a`` and ``b`` (in the order stored)."""
        for p in self.pairs:
            if (p.a, p.b) in ((a, b), (b, a)):
                return p
        raise StatisticsError(f"no pair ({a!r}, {b!r}) in this comparison; runs: {self.runs}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "shieldbench.comparison",
            "dataset": {"spec": self.dataset_spec, "content_hash": self.content_hash},
            "settings": self.settings.to_dict(),
            "runs": list(self.runs),
            "baseline": self.runs[0],
            "leaderboard": [e.to_dict() for e in self.leaderboard],
            "pairs": [p.to_dict() for p in self.pairs],
            "non_inferiority": [r.to_dict() for r in self.non_inferiority],
        }


def _labels(runs: Sequence[Run]) -> list[str]:
    """The spec; where two runs share it, the version (when theirs differ) or the run id."""
    specs = Counter(r.defense.spec for r in runs)
    versions = Counter((r.defense.spec, r.defense.version) for r in runs)
    labels = []
    for r in runs:
        spec, version = r.defense.spec, r.defense.version
        if specs[spec] == 1:
            labels.append(spec)
        elif version is not None and versions[(spec, version)] == 1:
            labels.append(f"{spec} version {version}")
        else:
            labels.append(f"{spec} [{r.id}]")
    if len(set(labels)) != len(labels):
        raise StatisticsError("two runs share a defense spec and a run id; give them distinct ids")
    return labels


def compare_runs(
    runs: Sequence[Run],
    *,
    alpha: float = 0.05,
    correction: Correction = "holm",
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    policy: ErrorPolicy | None = None,
    margin: float | None = None,
    rank_by: RankBy = "balanced_accuracy",
) -> Comparison:
    """Leaderboard and pairwise significance of ``runs`` (see the module doc)."""
    if len(runs) < 2:
        raise StatisticsError(f"a comparison needs at least two runs, got {len(runs)}")
    if correction not in ("holm", "bonferroni", "none"):
        raise StatisticsError(f"correction must be holm, bonferroni or none, got {correction!r}")
    if rank_by not in get_args(RankBy):
        raise StatisticsError(
            f"cannot rank by {rank_by!r}; choose one of {', '.join(get_args(RankBy))}"
        )
    if method not in INTERVAL_METHODS:
        raise StatisticsError(
            f"unknown interval method {method!r}; choose one of {', '.join(INTERVAL_METHODS)}"
        )
    if not 0.0 < alpha < 0.5:
        raise StatisticsError(f"alpha must be in (0, 0.5), got {alpha!r}")
    confidence = _check_confidence(confidence)
    for other in runs[1:]:
        check_same_data(runs[0], other)
    chosen = shared_policy(runs, policy)
    labels = _labels(runs)
    summaries = [summarize(r, confidence=confidence, method=method, policy=chosen) for r in runs]
    raw: list[tuple[int, int, PairedMetric, PairedMetric, AucComparison | None]] = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            att, ben = paired_tables(runs[i], runs[j], policy=chosen)
            aligned = aligned_scores(runs[i], runs[j], chosen)
            auc = None if aligned is None else compare_auc(*aligned, confidence=confidence)
            raw.append(
                (
                    i,
                    j,
                    paired_metric("block_rate", att, confidence=confidence, method=method),
                    paired_metric("false_positive_rate", ben, confidence=confidence, method=method),
                    auc,
                )
            )
    # Tests without data (no pairs in a class, AUC undefined) cannot reject: p = 1,
    # left out of the correction family.
    family: list[float | None] = []
    for _, _, att_m, ben_m, auc in raw:
        family += [m.test.p_value if m.table.n else None for m in (att_m, ben_m)]
        if auc is not None:
            family.append(None if auc.difference is None else auc.p_value)
    adjusted = iter(corrected(family, method=correction))
    pairs = []
    for i, j, att_m, ben_m, auc in raw:
        verdicts = rate_verdicts(att_m, ben_m, adjusted, alpha=alpha)
        if auc is not None:
            verdicts.append(
                metric_verdict(
                    "roc_auc", auc.difference, auc.p_value, next(adjusted), alpha=alpha, higher=True
                )
            )
        pairs.append(PairComparison(labels[i], labels[j], att_m, ben_m, auc, tuple(verdicts)))
    ni = _non_inferiority(runs, labels, chosen, margin=margin, alpha=alpha, correction=correction)
    settings = ComparisonSettings(alpha, correction, confidence, method, chosen, rank_by, margin)
    return Comparison(
        runs[0].dataset.spec,
        runs[0].dataset.content_hash,
        settings,
        tuple(labels),
        _leaderboard(summaries, labels, rank_by),
        tuple(pairs),
        ni,
    )


def _non_inferiority(
    runs: Sequence[Run],
    labels: Sequence[str],
    policy: ErrorPolicy,
    *,
    margin: float | None,
    alpha: float,
    correction: Correction,
) -> tuple[NonInferiorityResult, ...]:
    if margin is None:
        return ()
    rows = []
    for k in range(1, len(runs)):
        att, ben = paired_tables(runs[k], runs[0], policy=policy)
        rows.append(
            (labels[k], "block_rate", non_inferiority_test(att, margin=margin, alpha=alpha))
        )
        rows.append(
            (
                labels[k],
                "false_positive_rate",
                non_inferiority_test(ben, margin=margin, alpha=alpha, higher_is_better=False),
            )
        )
    adjusted = corrected(
        [None if r[2].difference is None else r[2].p_value for r in rows], method=correction
    )
    return tuple(
        NonInferiorityResult(c, labels[0], m, res, adj)
        for (c, m, res), adj in zip(rows, adjusted, strict=True)
    )


def _leaderboard(
    summaries: Sequence[RunSummary], labels: Sequence[str], rank_by: RankBy
) -> tuple[LeaderboardEntry, ...]:
    def key(i: int) -> tuple[float, float, float]:
        r = summaries[i].rates
        block = r.block_rate.value if r.block_rate.value is not None else -1.0
        fpr = r.false_positive_rate.value if r.false_positive_rate.value is not None else 2.0
        if rank_by == "balanced_accuracy":
            main = r.balanced_accuracy.value
        elif rank_by == "block_rate":
            main = r.block_rate.value
        elif rank_by == "false_positive_rate":
            main = None if r.false_positive_rate.value is None else -r.false_positive_rate.value
        elif rank_by == "roc_auc":
            sc = summaries[i].scores
            main = None if sc is None else sc.roc_auc.value
        else:
            raise StatisticsError(f"cannot rank by {rank_by!r}")
        return (-(main if main is not None else -2.0), -block, fpr)

    order = sorted(range(len(summaries)), key=key)
    return tuple(
        LeaderboardEntry(rank + 1, labels[i], summaries[i]) for rank, i in enumerate(order)
    )
