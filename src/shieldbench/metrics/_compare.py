"""Compare several runs on the same dataset: leaderboard, pairwise tests, verdicts.

:func:`paired_tables` pairs two runs sample by sample; :func:`compare_runs` does it
for every pair of runs and answers, for each pair and each metric, "significantly
better", "significantly worse" or "no significant difference", with the p-value.

- Metrics: ``block_rate`` (attacks; McNemar), ``false_positive_rate`` (benign;
  McNemar; lower is better) and ``roc_auc`` (paired DeLong) when both runs have
  scores on every verdict.
- Multiple testing: every p-value of the comparison (all pairs x metrics) forms one
  family, corrected with Holm by default, so "significant" holds at ``alpha``
  family-wise however many defenses are compared.
- Non-inferiority (``margin`` given): ``runs[0]`` is the baseline; every other run
  is tested as a candidate "not worse by more than ``margin``" on block rate and on
  FPR (Tango's score test; this family is corrected separately).
- Same data required: runs whose datasets' content hashes differ are refused with
  :class:`StatisticsError`. Runs of the same defense spec are allowed and labelled
  by run id. Pairs where either outcome is excluded (``exclude`` policy) are left
  out of that pair's tables. All runs are read under one error policy: ``policy``,
  or their shared recorded policy (mixed policies must be overridden explicitly).
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

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError
from shieldbench.metrics._confusion import effective_blocked
from shieldbench.metrics._curves import AucComparison, compare_auc, has_scores
from shieldbench.metrics._intervals import (
    INTERVAL_METHODS,
    IntervalMethod,
    Rate,
    _check_confidence,
    rate,
)
from shieldbench.metrics._paired import (
    Correction,
    McNemarResult,
    NonInferiority,
    PairedDifference,
    PairedTable,
    adjust_p_values,
    mcnemar_test,
    non_inferiority_test,
    paired_difference,
)
from shieldbench.metrics._summary import RunSummary, summarize
from shieldbench.types import ERROR_POLICIES, ErrorPolicy, Run

__all__ = [
    "Comparison",
    "ComparisonSettings",
    "LeaderboardEntry",
    "MetricVerdict",
    "NonInferiorityResult",
    "PairComparison",
    "PairedMetric",
    "compare_runs",
    "paired_tables",
    "shared_policy",
]

RankBy = Literal["balanced_accuracy", "block_rate", "false_positive_rate", "roc_auc"]


def shared_policy(runs: Sequence[Run], policy: ErrorPolicy | None) -> ErrorPolicy:
    """The error policy to read every run under (explicit, or the one they share)."""
    if policy is not None:
        if policy not in ERROR_POLICIES:
            raise StatisticsError(f"error policy must be one of {ERROR_POLICIES}, got {policy!r}")
        return policy
    recorded = {r.config.error_policy for r in runs}
    if len(recorded) > 1:
        raise StatisticsError(
            f"the runs record different error policies ({', '.join(sorted(recorded))});"
            " pass one policy explicitly (e.g. --policy fail_closed) to compare them"
        )
    return recorded.pop()


def _check_same_data(a: Run, b: Run) -> None:
    if a.dataset.content_hash != b.dataset.content_hash:
        raise StatisticsError(
            f"runs {a.id!r} and {b.id!r} are on different data: dataset {a.dataset.spec!r}"
            f" has content hash {a.dataset.content_hash} but {b.dataset.spec!r} has"
            f" {b.dataset.content_hash}; paired tests need the same samples"
        )


def paired_tables(
    run_a: Run, run_b: Run, *, policy: ErrorPolicy | None = None
) -> tuple[PairedTable, PairedTable]:
    """``(attacks, benign)`` paired tables of two runs on the same dataset.

    Matched by sample id; a pair is left out when either outcome is excluded by the
    policy. Raises :class:`StatisticsError` for different content hashes or ids.
    """
    _check_same_data(run_a, run_b)
    chosen = shared_policy((run_a, run_b), policy)
    by_id = {s.id: o for s, o in zip(run_b.samples, run_b.outcomes, strict=True)}
    if len(by_id) != len(run_a.samples) or any(s.id not in by_id for s in run_a.samples):
        raise StatisticsError(
            f"runs {run_a.id!r} and {run_b.id!r} share a content hash but not their sample ids"
        )
    cells = {True: [0, 0, 0, 0], False: [0, 0, 0, 0]}
    for sample, outcome_a in zip(run_a.samples, run_a.outcomes, strict=True):
        a = effective_blocked(outcome_a, chosen)
        b = effective_blocked(by_id[sample.id], chosen)
        if a is None or b is None:
            continue
        cells[sample.label == "attack"][(0 if b else 1) if a else (2 if b else 3)] += 1
    return PairedTable(*cells[True]), PairedTable(*cells[False])


@dataclass(frozen=True, slots=True)
class PairedMetric:
    """One metric of one pair: the table, both rates, their difference and McNemar."""

    metric: str
    table: PairedTable
    rate_a: Rate
    rate_b: Rate
    difference: PairedDifference
    test: McNemarResult

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "table": self.table.to_dict(),
            "rate_a": self.rate_a.to_dict(),
            "rate_b": self.rate_b.to_dict(),
            "difference": self.difference.to_dict(),
            "test": self.test.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class MetricVerdict:
    """ "a is significantly better / worse than b, or no significant difference"."""

    metric: str
    verdict: str
    p_value: float
    p_adjusted: float
    higher_is_better: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "verdict": self.verdict,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "higher_is_better": self.higher_is_better,
        }


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
    specs = Counter(r.defense.spec for r in runs)
    labels = [
        r.defense.spec if specs[r.defense.spec] == 1 else f"{r.defense.spec} [{r.id}]" for r in runs
    ]
    if len(set(labels)) != len(labels):
        raise StatisticsError("two runs share a defense spec and a run id; give them distinct ids")
    return labels


def _paired_metric(
    metric: str, table: PairedTable, *, confidence: float, method: IntervalMethod
) -> PairedMetric:
    return PairedMetric(
        metric,
        table,
        rate(table.k_a, table.n, confidence=confidence, method=method),
        rate(table.k_b, table.n, confidence=confidence, method=method),
        paired_difference(table, confidence=confidence),
        mcnemar_test(table),
    )


def _scores_by_id(run: Run, policy: ErrorPolicy) -> dict[str, float]:
    """Score per sample id under the policy (see :func:`score_arrays`); NaN = excluded."""
    out = {}
    for sample, outcome in zip(run.samples, run.outcomes, strict=True):
        if outcome.verdict is not None and outcome.verdict.score is not None:
            out[sample.id] = outcome.verdict.score
        elif policy == "exclude":
            out[sample.id] = math.nan
        else:
            out[sample.id] = math.inf if policy == "fail_closed" else -math.inf
    return out


def _aligned_scores(
    a: Run, b: Run, policy: ErrorPolicy
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64], npt.NDArray[np.float64]] | None:
    """Labels and both runs' scores on the samples both scored; None without scores."""
    if not (has_scores(a) and has_scores(b)):
        return None
    sa_by, sb_by = _scores_by_id(a, policy), _scores_by_id(b, policy)
    y = np.asarray([s.label == "attack" for s in a.samples], dtype=bool)
    sa = np.asarray([sa_by[s.id] for s in a.samples], dtype=float)
    sb = np.asarray([sb_by[s.id] for s in a.samples], dtype=float)
    keep = ~(np.isnan(sa) | np.isnan(sb))
    return y[keep], sa[keep], sb[keep]


def _verdict(
    metric: str, diff: float | None, p: float, adj: float, *, alpha: float, higher: bool
) -> MetricVerdict:
    if diff is None or adj >= alpha or diff == 0:
        word = "no significant difference"
    else:
        word = "significantly better" if (diff > 0) == higher else "significantly worse"
    return MetricVerdict(metric, word, p, adj, higher)


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
        _check_same_data(runs[0], other)
    chosen = shared_policy(runs, policy)
    labels = _labels(runs)
    summaries = [summarize(r, confidence=confidence, method=method, policy=chosen) for r in runs]
    raw: list[tuple[int, int, PairedMetric, PairedMetric, AucComparison | None]] = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            att, ben = paired_tables(runs[i], runs[j], policy=chosen)
            aligned = _aligned_scores(runs[i], runs[j], chosen)
            auc = None if aligned is None else compare_auc(*aligned, confidence=confidence)
            raw.append(
                (
                    i,
                    j,
                    _paired_metric("block_rate", att, confidence=confidence, method=method),
                    _paired_metric(
                        "false_positive_rate", ben, confidence=confidence, method=method
                    ),
                    auc,
                )
            )
    family: list[float] = []
    for _, _, att_m, ben_m, auc in raw:
        family += [att_m.test.p_value, ben_m.test.p_value]
        if auc is not None:
            family.append(auc.p_value)
    adjusted = iter(adjust_p_values(family, method=correction))
    pairs = []
    for i, j, att_m, ben_m, auc in raw:
        verdicts = [
            _verdict(
                "block_rate",
                att_m.difference.estimate,
                att_m.test.p_value,
                next(adjusted),
                alpha=alpha,
                higher=True,
            ),
            _verdict(
                "false_positive_rate",
                ben_m.difference.estimate,
                ben_m.test.p_value,
                next(adjusted),
                alpha=alpha,
                higher=False,
            ),
        ]
        if auc is not None:
            verdicts.append(
                _verdict(
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
    adjusted = adjust_p_values([r[2].p_value for r in rows], method=correction)
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
