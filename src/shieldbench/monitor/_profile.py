"""Has the model behind an end-to-end suite changed? Its behavioural profile, drifted.

An end-to-end run stores a behavioural profile of the model's benign answers in
``Run.end_to_end["profile"]`` (refusal, leak, secret and PII counts, answer lengths,
languages; see :func:`shieldbench.judges.behaviour_profile`). The monitor compares
the current run's profile with the pooled profiles of the same references as the
other metrics (the last run, a window, a baseline) through
:func:`shieldbench.metrics.profile_drift`: two-sample tests per figure (Fisher's
exact test for rates, Mann-Whitney U for lengths, chi-square for the language mix),
Holm-adjusted across the figures.

A drift counts in **either direction** (a model that suddenly refuses everything,
or one that stops refusing, both changed), and alerts when its Holm-adjusted
p-value is below ``alpha`` *and* the change is at least the minimum effect:
``min_effect.profile_rate`` for the rates and the share of the main language (5
points by default), ``min_effect.profile_length`` characters for the mean answer
length (0 by default: a significant change is enough).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from shieldbench.monitor._config import MinEffect
from shieldbench.monitor._detect import Finding
from shieldbench.types import Run

__all__ = ["compare_profiles_for_drift", "pooled_profile"]


def _profile(run: Run) -> Mapping[str, Any] | None:
    profile = run.end_to_end.get("profile") if run.end_to_end else None
    return profile if isinstance(profile, Mapping) else None


def pooled_profile(profiles: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Several runs' profiles as one: counts summed, lengths joined, languages summed.

    Example:
        >>> a = {"n": 2, "refused": 1, "leak": 0, "secret": 0, "pii": 0,
        ...      "lengths": [10, 20], "languages": {"en": 2}}
        >>> pooled_profile([a, a])["refused"], pooled_profile([a, a])["languages"]
        (2, {'en': 4})
    """
    languages: Counter[str] = Counter()
    for p in profiles:
        languages.update({str(k): int(v) for k, v in dict(p.get("languages") or {}).items()})
    return {
        **{k: sum(int(p[k]) for p in profiles) for k in ("n", "refused", "leak", "secret", "pii")},
        "lengths": [int(x) for p in profiles for x in p["lengths"]],
        "languages": dict(sorted(languages.items())),
    }


def compare_profiles_for_drift(
    current: Run,
    references: Sequence[Run],
    *,
    comparison: str,
    alpha: float,
    min_effect: MinEffect,
) -> list[Finding]:
    """A finding per profile figure of ``current`` against the pooled ``references``.

    Empty when ``current`` or none of the references carries a profile (a suite that
    is not end-to-end, or references from before it became one).
    """
    from shieldbench.metrics import profile_drift

    now = _profile(current)
    with_profile = [(r.id, p) for r in references if (p := _profile(r)) is not None]
    if now is None or not with_profile:
        return []
    ids = tuple(i for i, _ in with_profile)
    drift = profile_drift(pooled_profile([p for _, p in with_profile]), now, alpha=alpha)
    findings = []
    for f in drift.figures:
        floor = min_effect.profile_length if f.name == "answer_length" else min_effect.profile_rate
        findings.append(
            Finding(
                f"profile.{f.name}",
                comparison,
                f.b,
                f.a,
                None if f.difference is None else abs(f.difference),
                floor,
                f.test,
                f.p_adjusted,
                alpha,
                ids,
                extra={
                    "difference": f.difference,
                    "ci_low": f.ci_low,
                    "ci_high": f.ci_high,
                    "p_raw": f.p_value,
                    "p_adjusted": f.p_adjusted,
                    "n_current": drift.n_b,
                    "n_reference": drift.n_a,
                },
            )
        )
    return findings
