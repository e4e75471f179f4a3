"""Has a defense got worse? One run against a reference, metric by metric.

For each metric the monitor asks two things, and alerts only when both hold:

1. Is the change **significant** at ``alpha``? When the current run and a single
   reference run screened the same samples (same content hash), the test is
   paired: McNemar's (exact binomial below 25 discordant pairs, chi-square with
   continuity correction above; two-sided). Otherwise (a fresh sample each cycle,
   or a window of several runs pooled) it is a two-sample test: Fisher's exact test
   on the 2x2 table of counts (two-sided). Latency: a one-sided Mann-Whitney U test
   that the current latencies are larger.
2. Is it at least the **minimum effect** (in the bad direction): block rate down
   by ``min_effect.block_rate`` (5 points by default), false positive rate or error
   rate up by theirs, p95 latency up by the ratio ``min_effect.latency_ratio``?

A significant but tiny change, or a large change on too few samples, is reported
as a finding without an alert.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shieldbench.metrics import confusion, mcnemar_test, paired_tables
from shieldbench.monitor._config import MinEffect
from shieldbench.types import Run

__all__ = ["Finding", "compare_runs_for_drift"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One metric of one run against one reference."""

    metric: str
    comparison: str
    current: float | None
    reference: float | None
    effect: float | None
    min_effect: float
    test: str
    p_value: float | None
    alpha: float
    reference_runs: tuple[str, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def significant(self) -> bool:
        return self.p_value is not None and self.p_value < self.alpha

    @property
    def large(self) -> bool:
        return self.effect is not None and self.effect >= self.min_effect

    @property
    def alert(self) -> bool:
        return self.significant and self.large

    def describe(self) -> str:
        if self.metric.startswith("profile."):
            return self._describe_profile()
        if self.metric == "p95_latency":
            change = (
                "–"
                if self.current is None or self.reference is None
                else f"{self.reference:.2f} ms -> {self.current:.2f} ms ({self.effect:.2f}x,"
                f" minimum {self.min_effect:g}x)"
            )
        else:
            change = (
                "–"
                if self.current is None or self.reference is None or self.effect is None
                else f"{100 * self.reference:.1f}% -> {100 * self.current:.1f}%"
                f" ({100 * self.effect:+.1f} points worse, minimum {100 * self.min_effect:g})"
            )
        p = "–" if self.p_value is None else f"{self.p_value:.4g}"
        return f"{self.metric.replace('_', ' ')} vs {self.comparison}: {change}; {self.test} p={p}"

    def _describe_profile(self) -> str:
        """A behavioural-profile figure: a drift in either direction, Holm-adjusted p."""
        name = self.metric.removeprefix("profile.").replace("_", " ")
        diff = self.extra.get("difference")
        low, high = self.extra.get("ci_low"), self.extra.get("ci_high")
        if self.current is None or self.reference is None or diff is None:
            change = "–"
        elif name == "answer length":
            change = (
                f"mean {self.reference:.1f} -> {self.current:.1f} chars ({diff:+.1f},"
                f" minimum {self.min_effect:g})"
            )
        else:
            change = (
                f"{100 * self.reference:.1f}% -> {100 * self.current:.1f}%"
                f" ({100 * diff:+.1f} points, minimum {100 * self.min_effect:g})"
            )
        if low is not None and high is not None and name != "answer length":
            change += f", 95% CI [{100 * low:+.1f}, {100 * high:+.1f}]"
        elif low is not None and high is not None:
            change += f", 95% CI [{low:+.1f}, {high:+.1f}]"
        p = "–" if self.p_value is None else f"{self.p_value:.4g}"
        return f"profile {name} vs {self.comparison}: {change}; {self.test}; Holm-adjusted p={p}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "comparison": self.comparison,
            "current": self.current,
            "reference": self.reference,
            "effect": self.effect,
            "min_effect": self.min_effect,
            "test": self.test,
            "p_value": self.p_value,
            "alpha": self.alpha,
            "significant": self.significant,
            "alert": self.alert,
            "reference_runs": list(self.reference_runs),
            **self.extra,
        }


_MCNEMAR = {"exact-binomial": "McNemar exact", "chi2-continuity": "McNemar chi2 cc"}


def _fisher(k1: int, n1: int, k2: int, n2: int) -> float | None:
    if n1 == 0 or n2 == 0:
        return None
    from scipy import stats

    return float(stats.fisher_exact([[k1, n1 - k1], [k2, n2 - k2]]).pvalue)


def _counts(run: Run) -> dict[str, tuple[int, int]]:
    c = confusion(run)
    errors = c.errors + c.timeouts
    return {
        "block_rate": (c.tp, c.n_attacks),
        "false_positive_rate": (c.fp, c.n_benign),
        "error_rate": (errors, len(run.outcomes)),
    }


def _latencies(runs: Sequence[Run]) -> np.ndarray:
    return np.fromiter(
        (
            o.latency_ms
            for r in runs
            for o in r.outcomes
            if o.status == "ok" and o.latency_ms is not None
        ),
        dtype=float,
    )


def compare_runs_for_drift(
    current: Run,
    references: Sequence[Run],
    *,
    comparison: str,
    alpha: float,
    min_effect: MinEffect,
) -> list[Finding]:
    """A finding per metric of ``current`` against the pooled ``references``."""
    if not references:
        return []
    ids = tuple(r.id for r in references)
    paired = len(references) == 1 and (
        references[0].dataset.content_hash == current.dataset.content_hash
    )
    now = _counts(current)
    pooled = dict.fromkeys(now, (0, 0))
    for reference in references:
        for key, (k, n) in _counts(reference).items():
            pooled[key] = (pooled[key][0] + k, pooled[key][1] + n)
    tables = paired_tables(current, references[0]) if paired else None
    findings = []
    for metric, worse_sign in (("block_rate", -1), ("false_positive_rate", 1), ("error_rate", 1)):
        (k1, n1), (k2, n2) = now[metric], pooled[metric]
        cur = k1 / n1 if n1 else None
        ref = k2 / n2 if n2 else None
        effect = None if cur is None or ref is None else worse_sign * (cur - ref)
        if tables is not None and metric != "error_rate":
            table = tables[0] if metric == "block_rate" else tables[1]
            result = mcnemar_test(table)
            p: float | None = result.p_value
            test = _MCNEMAR.get(result.method, "paired McNemar")
        else:
            p, test = _fisher(k1, n1, k2, n2), "Fisher exact"
        findings.append(
            Finding(
                metric,
                comparison,
                cur,
                ref,
                effect,
                getattr(min_effect, metric),
                test,
                p,
                alpha,
                ids,
            )
        )
    lat_now, lat_ref = _latencies([current]), _latencies(references)
    p95_now = float(np.quantile(lat_now, 0.95)) if lat_now.size else None
    p95_ref = float(np.quantile(lat_ref, 0.95)) if lat_ref.size else None
    ratio = p95_now / p95_ref if p95_now is not None and p95_ref else None
    p_lat = None
    if lat_now.size and lat_ref.size:
        from scipy import stats

        p_lat = float(stats.mannwhitneyu(lat_now, lat_ref, alternative="greater").pvalue)
    findings.append(
        Finding(
            "p95_latency",
            comparison,
            p95_now,
            p95_ref,
            ratio,
            min_effect.latency_ratio,
            "Mann-Whitney U, one-sided",
            p_lat,
            alpha,
            ids,
        )
    )
    return findings
