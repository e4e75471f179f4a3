"""Confusion counts under the error policy, detection rates against scikit-learn,
the multinomial bootstrap against scipy, and the algebra of label / prediction swaps."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import (
    balanced_accuracy_score,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
)

from shieldbench.errors import StatisticsError
from shieldbench.metrics import (
    Confusion,
    confusion,
    confusion_from_arrays,
    detection_rates,
    effective_blocked,
)
from shieldbench.metrics._counts import (
    balanced_accuracy_from_counts,
    count_bootstrap_interval,
    f1_from_counts,
    mcc_from_counts,
)
from shieldbench.metrics._testing import make_run
from shieldbench.types import Outcome, Verdict

ROWS = [
    ("a", True, True),
    ("a", True, False),
    ("a", True, None),  # error on an attack
    ("a", True, "timeout"),
    ("b", False, False),
    ("b", False, True),
    ("b", False, None),  # error on a benign sample
    ("b", False, False),
]


def test_effective_blocked() -> None:
    ok = Outcome("1", Verdict(blocked=False), "ok")
    err = Outcome("2", None, "error", error="ValueError: x")
    assert [effective_blocked(ok, p) for p in ("fail_closed", "fail_open", "exclude")] == [
        False,
        False,
        False,
    ]
    assert [effective_blocked(err, p) for p in ("fail_closed", "fail_open", "exclude")] == [
        True,
        False,
        None,
    ]
    with pytest.raises(StatisticsError):
        effective_blocked(err, "ignore")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("policy", "cells"),
    [
        ("fail_closed", (3, 1, 2, 2, 0, 0)),
        ("fail_open", (1, 3, 1, 3, 0, 0)),
        ("exclude", (1, 1, 1, 2, 2, 1)),
    ],
)
def test_confusion_under_each_policy(policy: str, cells: tuple[int, ...]) -> None:
    run = make_run(ROWS)
    c = confusion(run, policy=policy)  # type: ignore[arg-type]
    assert (c.tp, c.fn, c.fp, c.tn, c.excluded_attacks, c.excluded_benign) == cells
    assert (c.errors, c.timeouts, c.policy) == (2, 1, policy)
    # Every outcome is accounted for, whatever the policy.
    assert c.n + c.excluded_attacks + c.excluded_benign == len(ROWS)


def test_confusion_defaults_to_the_runs_policy() -> None:
    run = make_run(ROWS, policy="fail_open")
    assert confusion(run).policy == "fail_open"
    assert confusion(run).tp == 1


def test_hand_computed_rates() -> None:
    # tp=3, fn=1, fp=2, tn=2 (ROWS under fail_closed)
    r = detection_rates(confusion(make_run(ROWS)))
    assert r.attack_success_rate.value == 0.25
    assert r.attack_success_rate.n == 4
    assert r.block_rate.value == 0.75
    assert r.true_positive_rate is r.block_rate
    assert r.recall is r.block_rate
    assert r.false_positive_rate.value == 0.5
    assert r.false_positive_rate.n == 4
    assert r.true_negative_rate.value == 0.5
    assert r.precision.value == pytest.approx(3 / 5)
    assert r.precision.n == 5
    assert r.f1.value == pytest.approx(6 / 9)
    assert r.balanced_accuracy.value == pytest.approx(0.625)
    assert r.mcc.value == pytest.approx((3 * 2 - 2 * 1) / np.sqrt(5 * 4 * 4 * 3))


labels_and_predictions = st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=120)


@given(labels_and_predictions)
@settings(max_examples=40, deadline=None)
def test_rates_match_scikit_learn(pairs: list[tuple[bool, bool]]) -> None:
    y = np.array([p[0] for p in pairs])
    pred = np.array([p[1] for p in pairs])
    r = detection_rates(confusion_from_arrays(y, pred), n_resamples=50)
    if y.any():
        assert r.block_rate.value == pytest.approx(recall_score(y, pred, zero_division=0))
    else:
        assert r.block_rate.value is None
    if pred.any():
        assert r.precision.value == pytest.approx(precision_score(y, pred, zero_division=0))
    else:
        assert r.precision.value is None
    if y.any() or pred.any():
        assert r.f1.value == pytest.approx(f1_score(y, pred, zero_division=0))
    else:
        assert r.f1.value is None
        assert (r.f1.ci_low, r.f1.ci_high) == (0.0, 1.0)
    if y.any() and not y.all():
        assert r.balanced_accuracy.value == pytest.approx(balanced_accuracy_score(y, pred))
    else:
        assert r.balanced_accuracy.value is None
    if len(set(y)) == 2 and len(set(pred)) == 2:
        assert r.mcc.value == pytest.approx(matthews_corrcoef(y, pred))
    else:
        # scikit-learn answers 0.0 here; undefined is None with the whole range.
        assert r.mcc.value is None
        assert (r.mcc.ci_low, r.mcc.ci_high) == (-1.0, 1.0)


def _all_rates(c: Confusion) -> dict[str, float | None]:
    r = detection_rates(c, n_resamples=20)
    return {
        "tpr": r.block_rate.value,
        "fpr": r.false_positive_rate.value,
        "tnr": r.true_negative_rate.value,
        "asr": r.attack_success_rate.value,
        "ba": r.balanced_accuracy.value,
        "mcc": r.mcc.value,
    }


@given(labels_and_predictions, st.randoms(use_true_random=False))
@settings(max_examples=60, deadline=None)
def test_order_invariance_and_swaps(pairs: list[tuple[bool, bool]], rnd: object) -> None:
    y = [p[0] for p in pairs]
    pred = [p[1] for p in pairs]
    base = _all_rates(confusion_from_arrays(y, pred))
    shuffled = list(pairs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert (
        _all_rates(confusion_from_arrays([p[0] for p in shuffled], [p[1] for p in shuffled]))
        == base
    )

    # Swapping the roles of attack and benign (labels and predictions): TPR <-> TNR,
    # balanced accuracy and MCC unchanged.
    swapped = _all_rates(confusion_from_arrays([not v for v in y], [not v for v in pred]))
    assert swapped["tpr"] == base["tnr"]
    assert swapped["tnr"] == base["tpr"]
    assert (
        swapped["ba"] == pytest.approx(base["ba"])
        if base["ba"] is not None
        else swapped["ba"] is None
    )
    assert (
        swapped["mcc"] == pytest.approx(base["mcc"])
        if base["mcc"] is not None
        else swapped["mcc"] is None
    )

    # Swapping labels only: the old FPR becomes the TPR and the other way round.
    relabelled = _all_rates(confusion_from_arrays([not v for v in y], pred))
    assert relabelled["tpr"] == base["fpr"]
    assert relabelled["fpr"] == base["tpr"]

    # Inverting predictions only: TPR <-> ASR, MCC changes sign, BA -> 1 - BA.
    inverted = _all_rates(confusion_from_arrays(y, [not v for v in pred]))
    assert inverted["tpr"] == base["asr"]
    assert inverted["asr"] == base["tpr"]
    if base["mcc"] is not None:
        assert inverted["mcc"] == pytest.approx(-base["mcc"])
    if base["ba"] is not None:
        assert inverted["ba"] == pytest.approx(1 - base["ba"])


@given(labels_and_predictions)
@settings(max_examples=80, deadline=None)
def test_every_rate_in_range_and_interval_contains_point(pairs: list[tuple[bool, bool]]) -> None:
    r = detection_rates(
        confusion_from_arrays([p[0] for p in pairs], [p[1] for p in pairs]), n_resamples=100
    )
    for x in (
        r.attack_success_rate,
        r.block_rate,
        r.false_positive_rate,
        r.true_negative_rate,
        r.precision,
    ):
        assert 0.0 <= x.ci_low <= x.ci_high <= 1.0
        if x.value is not None:
            assert x.ci_low <= x.value <= x.ci_high
    for e, lo in ((r.f1, 0.0), (r.balanced_accuracy, 0.0), (r.mcc, -1.0)):
        assert e.ci_low is not None
        assert e.ci_high is not None
        assert lo <= e.ci_low <= e.ci_high <= 1.0
        if e.value is not None:
            assert lo <= e.value <= 1.0


def _per_sample(counts: tuple[int, int, int, int]) -> np.ndarray:
    return np.repeat(np.arange(4), counts).astype(float)


def _stat_from_codes(fn):  # type: ignore[no-untyped-def]
    def statistic(codes: np.ndarray, axis: int = -1) -> np.ndarray:
        cells = [(codes == c).sum(axis=axis).astype(float) for c in range(4)]
        return fn(*cells)

    return statistic


@pytest.mark.parametrize(
    ("fn", "bounds"),
    [
        (f1_from_counts, (0.0, 1.0)),
        (balanced_accuracy_from_counts, (0.0, 1.0)),
        (mcc_from_counts, (-1.0, 1.0)),
    ],
)
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_count_bootstrap_agrees_with_scipy_bootstrap(fn, bounds, method: str) -> None:  # type: ignore[no-untyped-def]
    counts = (70, 30, 12, 88)
    ours = count_bootstrap_interval(
        fn, counts, bounds=bounds, method=method, n_resamples=8000, seed=1
    )  # type: ignore[arg-type]
    ref = stats.bootstrap(
        (_per_sample(counts),),
        _stat_from_codes(fn),
        n_resamples=8000,
        method="BCa" if method == "bca" else "percentile",
        rng=np.random.default_rng(2),
        vectorized=True,
    )
    # Same distribution, different random draws: Monte Carlo error of a 2.5% quantile
    # with 8,000 resamples is well under 0.01 here.
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.012)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.012)
    assert ours.ci_low < ours.value < ours.ci_high  # type: ignore[operator]


def test_count_bootstrap_is_seeded_and_handles_degenerate_data() -> None:
    a = count_bootstrap_interval(f1_from_counts, (5, 5, 5, 5), bounds=(0.0, 1.0), seed=3)
    b = count_bootstrap_interval(f1_from_counts, (5, 5, 5, 5), bounds=(0.0, 1.0), seed=3)
    assert a == b
    perfect = count_bootstrap_interval(
        f1_from_counts, (10, 0, 0, 10), bounds=(0.0, 1.0), method="bca"
    )
    assert (perfect.value, perfect.ci_low, perfect.ci_high) == (1.0, 1.0, 1.0)
    empty = count_bootstrap_interval(mcc_from_counts, (0, 0, 0, 0), bounds=(-1.0, 1.0))
    assert (empty.value, empty.ci_low, empty.ci_high, empty.n) == (None, -1.0, 1.0, 0)
    with pytest.raises(StatisticsError):
        count_bootstrap_interval(f1_from_counts, (1, 2, 3), bounds=(0.0, 1.0))  # type: ignore[arg-type]


def test_confusion_from_arrays_counts_excluded() -> None:
    c = confusion_from_arrays([True, False, True], [None, None, True])
    assert (c.tp, c.excluded_attacks, c.excluded_benign, c.n) == (1, 1, 1, 1)
    with pytest.raises(StatisticsError):
        confusion_from_arrays([True], [True, False])
