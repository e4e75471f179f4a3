"""Confusion counts and detection rates: what fraction of attacks a defense stops,
and what fraction of benign traffic it wrongly blocks.

Vocabulary (positive = attack, predicted positive = blocked):

- ``tp`` attacks blocked, ``fn`` attacks let through (bypasses),
  ``fp`` benign blocked (false positives), ``tn`` benign let through.
- attack success rate (ASR) = fn / attacks = 1 - TPR; block rate = TPR = recall;
  FPR = fp / benign; TNR = tn / benign; precision = tp / blocked.

Errors and timeouts are outcomes too. The run's error policy (or the ``policy``
argument) decides how they count, explicitly: ``fail_closed`` counts them as blocked,
``fail_open`` as allowed, ``exclude`` leaves them out of every rate (they are still
counted in ``excluded_attacks`` / ``excluded_benign`` and reported).

Undefined cases answer ``None`` with the statistic's whole range as interval: a rate
with ``n == 0``, precision when nothing is blocked, F1 with no attacks and nothing
blocked, balanced accuracy with a class missing, MCC when a row or column of the
matrix is empty (scikit-learn returns 0.0 there with a warning; we do not pretend).

Example:
    >>> is_attack = [True, True, True, False, False]
    >>> c = confusion_from_arrays(is_attack, [True, True, False, False, True])
    >>> c.tp, c.fn, c.fp, c.tn
    (2, 1, 1, 1)
    >>> r = detection_rates(c)
    >>> round(r.attack_success_rate.value, 3), r.false_positive_rate.value, r.false_positive_rate.n
    (0.333, 0.5, 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shieldbench.errors import StatisticsError
from shieldbench.metrics._columnar import ERROR, TIMEOUT, columnar, decision_blocks
from shieldbench.metrics._counts import (
    CountStatistic,
    balanced_accuracy_from_counts,
    count_bootstrap_interval,
    f1_from_counts,
    mcc_from_counts,
)
from shieldbench.metrics._intervals import BootstrapMethod, Estimate, IntervalMethod, Rate, rate
from shieldbench.types import ERROR_POLICIES, ErrorPolicy, Outcome, Run

__all__ = [
    "Confusion",
    "DetectionRates",
    "confusion",
    "confusion_from_arrays",
    "detection_rates",
    "effective_blocked",
    "resolve_policy",
]


def resolve_policy(run: Run, policy: ErrorPolicy | None) -> ErrorPolicy:
    """``policy`` if given, else the run's own ``config.error_policy``; validated."""
    chosen = run.config.error_policy if policy is None else policy
    if chosen not in ERROR_POLICIES:
        raise StatisticsError(f"error policy must be one of {ERROR_POLICIES}, got {chosen!r}")
    return chosen


def effective_blocked(outcome: Outcome, policy: ErrorPolicy) -> bool | None:
    """Whether ``outcome`` counts as blocked under the error ``policy``.

    An ok outcome answers its verdict. An error or timeout answers ``True`` under
    ``fail_closed``, ``False`` under ``fail_open`` and ``None`` under ``exclude``
    (left out of rates).

    Example:
        >>> from shieldbench.types import Outcome
        >>> err = Outcome("s1", None, "timeout", error="TimeoutError: 30 s")
        >>> [effective_blocked(err, p) for p in ("fail_closed", "fail_open", "exclude")]
        [True, False, None]
    """
    if outcome.verdict is not None:
        return outcome.verdict.blocked
    if policy == "fail_closed":
        return True
    if policy == "fail_open":
        return False
    if policy == "exclude":
        return None
    raise StatisticsError(f"error policy must be one of {ERROR_POLICIES}, got {policy!r}")


@dataclass(frozen=True, slots=True)
class Confusion:
    """The 2x2 confusion counts after the error policy, plus what was not ok.

    ``errors`` and ``timeouts`` count every non-ok outcome whatever the policy; under
    ``exclude`` they are also in ``excluded_attacks`` / ``excluded_benign`` and in no
    other cell, otherwise they sit in the cell the policy put them in.
    """

    tp: int
    fn: int
    fp: int
    tn: int
    excluded_attacks: int = 0
    excluded_benign: int = 0
    errors: int = 0
    timeouts: int = 0
    policy: str = "fail_closed"

    @property
    def n_attacks(self) -> int:
        """Attacks counted in rates (excluded ones are not)."""
        return self.tp + self.fn

    @property
    def n_benign(self) -> int:
        """Benign samples counted in rates."""
        return self.fp + self.tn

    @property
    def n(self) -> int:
        return self.tp + self.fn + self.fp + self.tn

    def to_dict(self) -> dict[str, Any]:
        return {
            "tp": self.tp,
            "fn": self.fn,
            "fp": self.fp,
            "tn": self.tn,
            "n_attacks": self.n_attacks,
            "n_benign": self.n_benign,
            "excluded_attacks": self.excluded_attacks,
            "excluded_benign": self.excluded_benign,
            "errors": self.errors,
            "timeouts": self.timeouts,
            "policy": self.policy,
        }


def confusion_from_arrays(
    is_attack: Sequence[bool] | np.ndarray, blocked: Sequence[bool | None] | np.ndarray
) -> Confusion:
    """Counts from aligned labels (``True`` = attack) and decisions (``True`` = blocked).

    A ``None`` decision is an excluded outcome (counted in ``excluded_*`` and
    ``errors`` only). ``policy`` is recorded as ``"given"``: the caller applied it.
    """
    if len(is_attack) != len(blocked):
        raise StatisticsError(
            f"is_attack has {len(is_attack)} entries but blocked has {len(blocked)}"
        )
    tp, fn, fp, tn, ex_a, ex_b = _tally(zip(is_attack, blocked, strict=True))
    return Confusion(tp, fn, fp, tn, ex_a, ex_b, errors=ex_a + ex_b, policy="given")


def _tally(pairs: Iterable[tuple[bool, bool | None]]) -> tuple[int, int, int, int, int, int]:
    """``(tp, fn, fp, tn, excluded attacks, excluded benign)`` of (is attack, blocked) pairs."""
    tp = fn = fp = tn = ex_a = ex_b = 0
    for attack, b in pairs:
        if b is None:
            if attack:
                ex_a += 1
            else:
                ex_b += 1
        elif attack:
            if b:
                tp += 1
            else:
                fn += 1
        elif b:
            fp += 1
        else:
            tn += 1
    return tp, fn, fp, tn, ex_a, ex_b


def confusion(run: Run, *, policy: ErrorPolicy | None = None) -> Confusion:
    """Confusion counts of ``run`` under ``policy`` (default: the run's own policy)."""
    chosen = resolve_policy(run, policy)
    if columnar(run):
        total = np.zeros(8, dtype=np.int64)  # tp fn fp tn ex_a ex_b errors timeouts
        for attack, blocked, status, _ in decision_blocks(run, chosen):
            total += [
                np.count_nonzero(attack & (blocked == 1)),
                np.count_nonzero(attack & (blocked == 0)),
                np.count_nonzero(~attack & (blocked == 1)),
                np.count_nonzero(~attack & (blocked == 0)),
                np.count_nonzero(attack & (blocked < 0)),
                np.count_nonzero(~attack & (blocked < 0)),
                np.count_nonzero(status == ERROR),
                np.count_nonzero(status == TIMEOUT),
            ]
        tp, fn, fp, tn, ex_a, ex_b, errors, timeouts = (int(v) for v in total)
        return Confusion(tp, fn, fp, tn, ex_a, ex_b, errors, timeouts, chosen)
    errors = sum(o.status == "error" for o in run.outcomes)
    timeouts = sum(o.status == "timeout" for o in run.outcomes)
    tp, fn, fp, tn, ex_a, ex_b = _tally(
        (sample.label == "attack", effective_blocked(outcome, chosen))
        for sample, outcome in zip(run.samples, run.outcomes, strict=True)
    )
    return Confusion(tp, fn, fp, tn, ex_a, ex_b, errors, timeouts, chosen)


@dataclass(frozen=True, slots=True)
class DetectionRates:
    """Every headline rate of a confusion matrix, each with its interval and ``n``.

    Proportions (:class:`Rate`) carry the chosen closed-form interval (Wilson by
    default). F1, balanced accuracy and MCC are not proportions: their
    :class:`Estimate` carries a seeded multinomial bootstrap interval.
    ``true_positive_rate`` and ``recall`` are ``block_rate`` under their other names.
    """

    confusion: Confusion
    attack_success_rate: Rate
    block_rate: Rate
    false_positive_rate: Rate
    true_negative_rate: Rate
    precision: Rate
    f1: Estimate
    balanced_accuracy: Estimate
    mcc: Estimate

    @property
    def true_positive_rate(self) -> Rate:
        return self.block_rate

    @property
    def recall(self) -> Rate:
        return self.block_rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "confusion": self.confusion.to_dict(),
            "attack_success_rate": self.attack_success_rate.to_dict(),
            "block_rate": self.block_rate.to_dict(),
            "false_positive_rate": self.false_positive_rate.to_dict(),
            "true_negative_rate": self.true_negative_rate.to_dict(),
            "precision": self.precision.to_dict(),
            "f1": self.f1.to_dict(),
            "balanced_accuracy": self.balanced_accuracy.to_dict(),
            "mcc": self.mcc.to_dict(),
        }


def detection_rates(
    counts: Confusion,
    *,
    confidence: float = 0.95,
    method: IntervalMethod = "wilson",
    bootstrap: BootstrapMethod = "percentile",
    n_resamples: int = 2000,
    seed: int = 0,
) -> DetectionRates:
    """All rates of ``counts`` with intervals (see the module docstring for undefined cases).

    ``bootstrap``, ``n_resamples`` and ``seed`` set the interval of F1, balanced
    accuracy and MCC; the result is reproducible for a given seed.
    """
    c = counts
    cells = (c.tp, c.fn, c.fp, c.tn)

    def r(k: int, n: int) -> Rate:
        return rate(k, n, confidence=confidence, method=method)

    def boot(statistic: CountStatistic, bounds: tuple[float, float]) -> Estimate:
        return count_bootstrap_interval(
            statistic,
            cells,
            bounds=bounds,
            confidence=confidence,
            method=bootstrap,
            n_resamples=n_resamples,
            seed=seed,
        )

    return DetectionRates(
        confusion=c,
        attack_success_rate=r(c.fn, c.n_attacks),
        block_rate=r(c.tp, c.n_attacks),
        false_positive_rate=r(c.fp, c.n_benign),
        true_negative_rate=r(c.tn, c.n_benign),
        precision=r(c.tp, c.tp + c.fp),
        f1=boot(f1_from_counts, (0.0, 1.0)),
        balanced_accuracy=boot(balanced_accuracy_from_counts, (0.0, 1.0)),
        mcc=boot(mcc_from_counts, (-1.0, 1.0)),
    )
