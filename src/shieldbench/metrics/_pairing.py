"""Pairing two runs on the same samples, and paired tests per category.

The building blocks of :func:`~shieldbench.metrics.compare_runs`:

- :func:`paired_tables` matches two runs sample by sample (by id; refused unless the
  datasets' content hashes are equal) into an attack table and a benign table.
  A pair is left out when either outcome is excluded by the ``exclude`` policy.
- :class:`PairedMetric`: one table with both rates, the paired difference
  (Newcombe) and McNemar's test; :class:`MetricVerdict` reads a corrected p-value
  and the sign of the difference as "significantly better / worse" or "no
  significant difference".
- :func:`compare_groups`: the same for two runs within each category (or tier,
  severity, source, subcategory), Holm-corrected across the groups and metrics
  tested. A test with no pairs (a group without benign samples, say) has p = 1 and is
  left out of the correction family: it cannot reject and should not cost the
  others power.

All runs are read under one error policy: ``policy``, or their shared recorded
policy (mixed recorded policies must be overridden explicitly).

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> a = make_run([("jb", True, True)] * 30 + [("leak", True, True)] * 30)
    >>> b = make_run([("jb", True, False)] * 30 + [("leak", True, True)] * 30)
    >>> [(g.group, g.verdicts[0].verdict) for g in compare_groups(a, b)]
    [('jb', 'significantly better'), ('leak', 'no significant difference')]
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from shieldbench.errors import StatisticsError
from shieldbench.metrics._breakdown import DIMENSIONS, UNSPECIFIED, Dimension
from shieldbench.metrics._confusion import effective_blocked
from shieldbench.metrics._curves import has_scores
from shieldbench.metrics._intervals import IntervalMethod, Rate, rate
from shieldbench.metrics._paired import (
    Correction,
    McNemarResult,
    PairedDifference,
    PairedTable,
    adjust_p_values,
    mcnemar_test,
    paired_difference,
)
from shieldbench.types import ERROR_POLICIES, ErrorPolicy, Run

__all__ = [
    "GroupComparison",
    "MetricVerdict",
    "PairedMetric",
    "aligned_scores",
    "check_same_data",
    "compare_groups",
    "corrected",
    "metric_verdict",
    "paired_metric",
    "paired_tables",
    "shared_policy",
]


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


def check_same_data(a: Run, b: Run) -> None:
    if a.dataset.content_hash != b.dataset.content_hash:
        raise StatisticsError(
            f"runs {a.id!r} and {b.id!r} are on different data: dataset {a.dataset.spec!r}"
            f" has content hash {a.dataset.content_hash} but {b.dataset.spec!r} has"
            f" {b.dataset.content_hash}; paired tests need the same samples"
        )


def _grouped_tables(
    run_a: Run, run_b: Run, *, policy: ErrorPolicy | None, by: str | None
) -> dict[str, tuple[list[int], list[int]]]:
    check_same_data(run_a, run_b)
    chosen = shared_policy((run_a, run_b), policy)
    by_id = {s.id: o for s, o in zip(run_b.samples, run_b.outcomes, strict=True)}
    if len(by_id) != len(run_a.samples) or any(s.id not in by_id for s in run_a.samples):
        raise StatisticsError(
            f"runs {run_a.id!r} and {run_b.id!r} share a content hash but not their sample ids"
        )
    samples_b = {s.id: s for s in run_b.samples}
    for sample in run_a.samples:  # the recorded hash is a claim; the samples are the data
        other = samples_b[sample.id]
        if sample.label != other.label:
            raise StatisticsError(
                f"runs {run_a.id!r} and {run_b.id!r} record the same content hash, but sample"
                f" {sample.id!r} is labelled {sample.label!r} in one and {other.label!r} in"
                " the other (a run file was edited or"
                " written from other data); paired tests need the same samples"
            )
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for sample, outcome_a in zip(run_a.samples, run_a.outcomes, strict=True):
        key = "" if by is None else getattr(sample, by)
        cells = groups.setdefault(UNSPECIFIED if key is None else str(key), ([0] * 4, [0] * 4))
        a = effective_blocked(outcome_a, chosen)
        b = effective_blocked(by_id[sample.id], chosen)
        if a is None or b is None:
            continue
        table = cells[0] if sample.label == "attack" else cells[1]
        table[(0 if b else 1) if a else (2 if b else 3)] += 1
    return groups


def paired_tables(
    run_a: Run, run_b: Run, *, policy: ErrorPolicy | None = None
) -> tuple[PairedTable, PairedTable]:
    """``(attacks, benign)`` paired tables of two runs on the same dataset.

    Matched by sample id; a pair is left out when either outcome is excluded by the
    policy. Raises :class:`StatisticsError` for different content hashes or ids.
    """
    groups = _grouped_tables(run_a, run_b, policy=policy, by=None)
    attacks, benign = groups.get("", ([0] * 4, [0] * 4))
    return PairedTable(*attacks), PairedTable(*benign)


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


def paired_metric(
    metric: str, table: PairedTable, *, confidence: float, method: IntervalMethod
) -> PairedMetric:
    """Rates, Newcombe difference and McNemar test of one paired table."""
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


def aligned_scores(
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


def metric_verdict(
    metric: str, diff: float | None, p: float, adj: float, *, alpha: float, higher: bool
) -> MetricVerdict:
    """Read a (corrected) p-value and the sign of a difference as a verdict on a vs b."""
    if diff is None or adj >= alpha or diff == 0:
        word = "no significant difference"
    else:
        word = "significantly better" if (diff > 0) == higher else "significantly worse"
    return MetricVerdict(metric, word, p, adj, higher)


def rate_verdicts(
    attacks: PairedMetric, benign: PairedMetric, adjusted: Iterator[float], *, alpha: float
) -> list[MetricVerdict]:
    """The block-rate and false-positive-rate verdicts, taking their corrected p-values
    (in that order) from ``adjusted``."""
    return [
        metric_verdict(
            "block_rate",
            attacks.difference.estimate,
            attacks.test.p_value,
            next(adjusted),
            alpha=alpha,
            higher=True,
        ),
        metric_verdict(
            "false_positive_rate",
            benign.difference.estimate,
            benign.test.p_value,
            next(adjusted),
            alpha=alpha,
            higher=False,
        ),
    ]


def corrected(p_values: Sequence[float | None], *, method: Correction) -> list[float]:
    """Adjust the p-values that are not ``None``; ``None`` (no data) becomes 1.0."""
    real = [p for p in p_values if p is not None]
    adjusted = iter(adjust_p_values(real, method=method))
    return [1.0 if p is None else next(adjusted) for p in p_values]


@dataclass(frozen=True, slots=True)
class GroupComparison:
    """Two runs compared within one group (e.g. category ``jailbreak``)."""

    dimension: str
    group: str
    attacks: PairedMetric
    benign: PairedMetric
    verdicts: tuple[MetricVerdict, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "group": self.group,
            "attacks": self.attacks.to_dict(),
            "benign": self.benign.to_dict(),
            "verdicts": [v.to_dict() for v in self.verdicts],
        }


def compare_groups(
    run_a: Run,
    run_b: Run,
    *,
    by: Dimension = "category",
    alpha: float = 0.05,
    correction: Correction = "holm",
    policy: ErrorPolicy | None = None,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
) -> tuple[GroupComparison, ...]:
    """Paired tests of ``run_a`` versus ``run_b`` in every group of ``by``, sorted by
    group name; verdicts read "a is ... than b" after correction across the groups."""
    if by not in DIMENSIONS:
        raise StatisticsError(f"cannot group by {by!r}; choose one of {', '.join(DIMENSIONS)}")
    if not 0.0 < alpha < 0.5:
        raise StatisticsError(f"alpha must be in (0, 0.5), got {alpha!r}")
    groups = _grouped_tables(run_a, run_b, policy=policy, by=by)
    metrics = []
    for name in sorted(groups):
        att, ben = groups[name]
        metrics.append(
            (
                name,
                paired_metric(
                    "block_rate", PairedTable(*att), confidence=confidence, method=method
                ),
                paired_metric(
                    "false_positive_rate", PairedTable(*ben), confidence=confidence, method=method
                ),
            )
        )
    family: list[float | None] = []
    for _, att_m, ben_m in metrics:
        family += [m.test.p_value if m.table.n else None for m in (att_m, ben_m)]
    adjusted = iter(corrected(family, method=correction))
    out = []
    for name, att_m, ben_m in metrics:
        verdicts = tuple(rate_verdicts(att_m, ben_m, adjusted, alpha=alpha))
        out.append(GroupComparison(by, name, att_m, ben_m, verdicts))
    return tuple(out)
