"""The sample-size planner: the smallest n whose interval is narrow enough."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from shieldbench.errors import StatisticsError
from shieldbench.metrics import required_sample_size, wilson_half_width


@given(
    margin=st.floats(min_value=0.02, max_value=0.3),
    rate=st.floats(min_value=0.0, max_value=1.0),
    confidence=st.sampled_from([0.9, 0.95, 0.99]),
)
@settings(max_examples=80, deadline=None)
def test_wilson_plan_is_the_smallest_sufficient_n(
    margin: float, rate: float, confidence: float
) -> None:
    n = required_sample_size(margin=margin, rate=rate, confidence=confidence)
    assert wilson_half_width(n, rate, confidence=confidence) <= margin
    if n > 1:
        assert wilson_half_width(n - 1, rate, confidence=confidence) > margin


def test_half_width_is_the_wilson_interval() -> None:
    for n, k in ((50, 5), (141, 14), (1000, 500)):
        low, high = proportion_confint(k, n, method="wilson")
        assert wilson_half_width(n, k / n) == pytest.approx((high - low) / 2, abs=1e-12)
    assert wilson_half_width(0, 0.3) == 0.5


def test_wald_plan_is_the_textbook_formula() -> None:
    assert required_sample_size(margin=0.05, rate=0.5, method="wald") == 385
    z = 1.959963984540054
    assert required_sample_size(margin=0.03, rate=0.2, method="wald") == math.ceil(
        z * z * 0.2 * 0.8 / 0.03**2
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"margin": 0.0},
        {"margin": 0.6},
        {"margin": 0.05, "rate": 1.2},
        {"margin": 0.05, "confidence": 1.0},
        {"margin": 0.05, "rate": 0.0, "method": "wald"},
        {"margin": 0.05, "method": "exact"},
    ],
)
def test_bad_plans_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(StatisticsError):
        required_sample_size(**kwargs)  # type: ignore[arg-type]
