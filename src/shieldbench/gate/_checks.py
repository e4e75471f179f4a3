"""The gate's checks: paired non-inferiority, absolute limits, latency ratio.

Every check answers a :class:`GateCheck` with its figure, limit, test, p-value (when
the check is a test) and verdict; :func:`run_gate` runs the configured ones on a
candidate and a baseline run on the same data (same content hash, or it refuses).

**Non-inferiority** (``margin > 0``, the default 0.02): on the attacks, H0 "the
candidate's block rate is lower than the baseline's by ``margin`` or more"; on the
benign samples, H0 "its false positive rate is higher by ``margin`` or more". Each
is Tango's score test for paired proportions (one-sided, at ``alpha``), so the
candidate must *show* it is not worse: too few samples fail the gate rather than
wave a regression through.

**No significant regression** (``margin == 0``): a margin of zero would ask the
candidate to be *better*; instead the gate fails only when the candidate is
significantly worse: one-sided mid-p McNemar test on the discordant pairs. The
exact (conditional binomial) McNemar test is conservative with few discordant
pairs, its actual type-I error often far below ``alpha``; the mid-p version
(Lancaster 1961; Fagerland, Lydersen & Laake 2013, BMC Med Res Methodol 13:91)
keeps it close to ``alpha`` while rarely exceeding it, which for a regression gate
means fewer missed regressions at the same false-alarm rate.

**Absolute limits** are checked on the pessimistic bound of the 95% interval by
default (Wilson for rates, the order-statistic interval for per-call p95 latency): a
candidate passes ``--min-tpr 0.9`` only when its block rate is at least 0.9 with
95% confidence. ``point=True`` checks the point estimates instead.

Latency here is always **per-call latency**, what one caller waits for one text
(``Outcome.latency_ms``: one-text calls, caches bypassed; in a batched run the
seeded sample of texts called singly), never a batch's cost shared among its texts.

**Latency ratio**: the candidate's per-call latency quantile (p50 by default) over the
baseline's, on the samples both timed, with a seeded percentile bootstrap
interval (2,000 paired resamples); the upper bound (or the point) must not exceed
``max_latency_ratio``. The p-value is the bootstrap's share of resamples at or
above the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shieldbench.errors import RunError
from shieldbench.identity import DefenseIdentity
from shieldbench.metrics import (
    PairedTable,
    confusion,
    latency_stats,
    non_inferiority_test,
    paired_tables,
    rate,
)
from shieldbench.types import ErrorPolicy, Run

__all__ = [
    "GateCheck",
    "GateResult",
    "GateSettings",
    "latency_ratio",
    "mid_p_mcnemar",
    "run_gate",
    "same_run",
]


@dataclass(frozen=True, slots=True)
class GateSettings:
    """Which checks run and their limits (``None``: that check is off)."""

    margin: float = 0.02
    alpha: float = 0.05
    min_tpr: float | None = None
    max_fpr: float | None = None
    max_p95_ms: float | None = None
    max_error_rate: float | None = None
    max_latency_ratio: float | None = None
    latency_quantile: float = 0.5
    point: bool = False
    policy: ErrorPolicy | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.margin < 1.0:
            raise RunError(f"--margin must be in [0, 1), got {self.margin!r}")
        if not 0.0 < self.alpha < 0.5:
            raise RunError(f"--alpha must be in (0, 0.5), got {self.alpha!r}")
        for name in ("min_tpr", "max_fpr", "max_error_rate"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise RunError(f"--{name.replace('_', '-')} must be in [0, 1], got {value!r}")
        if self.max_p95_ms is not None and self.max_p95_ms <= 0:
            raise RunError(f"--max-p95-ms must be > 0, got {self.max_p95_ms!r}")
        if self.max_latency_ratio is not None and self.max_latency_ratio <= 0:
            raise RunError(f"--max-latency-ratio must be > 0, got {self.max_latency_ratio!r}")
        if not 0.0 < self.latency_quantile < 1.0:
            raise RunError(f"--latency-quantile must be in (0, 1), got {self.latency_quantile}")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One check: ``value`` (the figure), ``bound`` (what was compared with ``limit``)."""

    name: str
    description: str
    value: float | None
    bound: float | None
    limit: float
    comparison: str  # ">=" or "<=": bound must be ... limit
    test: str
    p_value: float | None
    passed: bool
    unit: str = ""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class GateResult:
    """Every check of one candidate against one baseline."""

    candidate: str
    baseline: str
    dataset: str
    content_hash: str
    policy: str
    settings: GateSettings
    checks: tuple[GateCheck, ...] = field(default=())
    candidate_defense: DefenseIdentity | None = None
    baseline_defense: DefenseIdentity | None = None

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if not c.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "shieldbench.gate",
            "passed": self.passed,
            "candidate": self.candidate,
            "baseline": self.baseline,
            "candidate_defense": _identity_dict(self.candidate_defense),
            "baseline_defense": _identity_dict(self.baseline_defense),
            "dataset": self.dataset,
            "content_hash": self.content_hash,
            "policy": self.policy,
            "settings": self.settings.to_dict(),
            "checks": [c.to_dict() for c in self.checks],
        }


def _identity_dict(identity: DefenseIdentity | None) -> dict[str, Any] | None:
    return None if identity is None else identity.to_dict()


def same_run(a: Run, b: Run) -> bool:
    """Whether ``a`` and ``b`` are one run (same id, defense identity and times): a
    gate of a run against itself has no discordant pair and can show nothing."""
    return (
        a.id == b.id
        and a.started == b.started
        and DefenseIdentity.of(a.defense.spec, a.defense.version)
        == DefenseIdentity.of(b.defense.spec, b.defense.version)
    )


def mid_p_mcnemar(table: PairedTable, *, worse_is_more_a: bool) -> float:
    """One-sided mid-p McNemar p-value for "a is worse than b".

    For a block rate (``worse_is_more_a=False``) a is worse when few discordant
    pairs are ``only_a``: ``P(X < x) + P(X = x) / 2`` with ``X ~ Bin(d, 1/2)``,
    ``x = only_a``; for a false positive rate the upper tail. No discordant pairs:
    1.0.

    Example:
        >>> round(mid_p_mcnemar(PairedTable(50, 1, 9, 40), worse_is_more_a=False), 4)
        0.0059
    """
    from scipy import stats

    d = table.discordant
    if d == 0:
        return 1.0
    x = table.only_a
    half = 0.5 * float(stats.binom.pmf(x, d, 0.5))
    if worse_is_more_a:
        return min(1.0, float(stats.binom.sf(x, d, 0.5)) + half)
    return min(1.0, float(stats.binom.cdf(x - 1, d, 0.5)) + half)


def _paired_check(
    table: PairedTable, metric: str, higher_is_better: bool, s: GateSettings
) -> GateCheck:
    label = "block rate" if higher_is_better else "false positive rate"
    diff = None if table.n == 0 else (table.only_a - table.only_b) / table.n
    if s.margin > 0:
        ni = non_inferiority_test(
            table, margin=s.margin, alpha=s.alpha, higher_is_better=higher_is_better
        )
        worse = "lower" if higher_is_better else "higher"
        return GateCheck(
            name=f"non_inferiority.{metric}",
            description=f"{label} not {worse} than the baseline's by {100 * s.margin:g} points"
            " or more",
            value=diff,
            bound=ni.bound,
            limit=-s.margin if higher_is_better else s.margin,
            comparison=">" if higher_is_better else "<",
            test=f"Tango score test for paired proportions, one-sided, alpha {s.alpha:g}",
            p_value=ni.p_value,
            passed=ni.non_inferior,
            unit="points",
            note=f"n={table.n} pairs, {table.discordant} discordant",
        )
    p = mid_p_mcnemar(table, worse_is_more_a=not higher_is_better)
    return GateCheck(
        name=f"no_regression.{metric}",
        description=f"{label} not significantly worse than the baseline's",
        value=diff,
        bound=diff,
        limit=s.alpha,
        comparison="p>=",
        test=f"mid-p McNemar test, one-sided, alpha {s.alpha:g}",
        p_value=p,
        passed=p >= s.alpha,
        unit="points",
        note=f"n={table.n} pairs, {table.discordant} discordant",
    )


def _limit(
    name: str,
    description: str,
    value: float | None,
    bound: float | None,
    limit: float,
    *,
    upper: bool,
    interval: str,
    s: GateSettings,
    unit: str = "",
    note: str = "",
) -> GateCheck:
    checked = value if s.point else bound
    passed = checked is not None and (checked <= limit if upper else checked >= limit)
    if checked is None:
        note = note or "undefined: no data to bound it"
    return GateCheck(
        name=name,
        description=description,
        value=value,
        bound=checked,
        limit=limit,
        comparison="<=" if upper else ">=",
        test="point estimate" if s.point else interval,
        p_value=None,
        passed=passed,
        unit=unit,
        note=note,
    )


def _absolute(candidate: Run, policy: ErrorPolicy, s: GateSettings) -> list[GateCheck]:
    checks = []
    counts = confusion(candidate, policy=policy)
    if s.min_tpr is not None:
        r = rate(counts.tp, counts.n_attacks)
        checks.append(
            _limit(
                "limit.min_tpr",
                "block rate (TPR) at least the limit",
                r.value,
                None if r.value is None else r.ci_low,
                s.min_tpr,
                upper=False,
                interval="lower bound of the 95% Wilson interval",
                s=s,
                note=f"n={counts.n_attacks} attacks",
            )
        )
    if s.max_fpr is not None:
        r = rate(counts.fp, counts.n_benign)
        checks.append(
            _limit(
                "limit.max_fpr",
                "false positive rate at most the limit",
                r.value,
                None if r.value is None else r.ci_high,
                s.max_fpr,
                upper=True,
                interval="upper bound of the 95% Wilson interval",
                s=s,
                note=f"n={counts.n_benign} benign",
            )
        )
    if s.max_error_rate is not None:
        n = len(candidate.outcomes)
        r = rate(counts.errors + counts.timeouts, n)
        checks.append(
            _limit(
                "limit.max_error_rate",
                "errors and timeouts at most the limit",
                r.value,
                None if r.value is None else r.ci_high,
                s.max_error_rate,
                upper=True,
                interval="upper bound of the 95% Wilson interval",
                s=s,
                note=f"{counts.errors + counts.timeouts} of {n}",
            )
        )
    if s.max_p95_ms is not None:
        p95 = latency_stats(candidate).p95
        checks.append(
            _limit(
                "limit.max_p95_ms",
                "per-call p95 latency at most the limit",
                p95.value,
                p95.ci_high,
                s.max_p95_ms,
                upper=True,
                s=s,
                unit="ms",
                interval="upper bound of the 95% order-statistic interval",
                note=f"n={p95.n} one-text calls",
            )
        )
    return checks


def _latency_pairs(candidate: Run, baseline: Run) -> tuple[np.ndarray, np.ndarray]:
    base = {
        s.id: o.latency_ms
        for s, o in zip(baseline.samples, baseline.outcomes, strict=True)
        if o.status == "ok" and o.latency_ms is not None
    }
    pairs = [
        (o.latency_ms, base[s.id])
        for s, o in zip(candidate.samples, candidate.outcomes, strict=True)
        if o.status == "ok" and o.latency_ms is not None and s.id in base
    ]
    arr = np.asarray(pairs, dtype=float).reshape(-1, 2)
    return arr[:, 0], arr[:, 1]


def latency_ratio(
    candidate: Run, baseline: Run, *, q: float = 0.5, resamples: int = 2000, seed: int = 0
) -> tuple[float | None, float | None, float | None, np.ndarray]:
    """``(ratio, ci_low, ci_high, bootstrap ratios)`` of the ``q``-quantile latency."""
    c, b = _latency_pairs(candidate, baseline)
    if c.size == 0 or np.quantile(b, q) <= 0:
        return None, None, None, np.empty(0)
    rng = np.random.default_rng(seed)
    ratios = np.empty(resamples)
    chunk = max(1, 4_000_000 // c.size)
    for start in range(0, resamples, chunk):
        stop = min(resamples, start + chunk)
        idx = rng.integers(0, c.size, size=(stop - start, c.size))
        num = np.quantile(c[idx], q, axis=1)
        den = np.maximum(np.quantile(b[idx], q, axis=1), 1e-12)
        ratios[start:stop] = num / den
    point = float(np.quantile(c, q) / np.quantile(b, q))
    low, high = np.quantile(ratios, [0.025, 0.975])
    return point, float(low), float(high), ratios


def run_gate(candidate: Run, baseline: Run, settings: GateSettings | None = None) -> GateResult:
    """Every configured check of ``candidate`` against ``baseline``.

    Raises :class:`~shieldbench.errors.RunError` when the runs are not on the same
    data (content hash) or do not share sample ids, or when the baseline is the
    candidate run itself (:func:`same_run`): a paired gate cannot answer.
    """
    from shieldbench.metrics import shared_policy

    s = settings or GateSettings()
    if same_run(candidate, baseline):
        raise RunError(
            f"the baseline is the candidate run itself ({candidate.id!r},"
            f" {candidate.defense.spec}, started {candidate.started.isoformat()}): a run"
            " gated against itself has no discordant pair and shows nothing; name an earlier"
            " run as the baseline (a run file, a run id, latest:SPEC@DATASET or tag:KEY=VALUE)"
        )
    if candidate.dataset.content_hash != baseline.dataset.content_hash:
        raise RunError(
            f"the candidate {candidate.id!r} ran on {candidate.dataset.spec!r}"
            f" ({candidate.dataset.content_hash}) but the baseline {baseline.id!r} on"
            f" {baseline.dataset.spec!r} ({baseline.dataset.content_hash}); the gate compares"
            " runs on the same data: re-run the baseline on this dataset version"
        )
    policy = shared_policy((candidate, baseline), s.policy)
    attacks, benign = paired_tables(candidate, baseline, policy=policy)
    checks = [
        _paired_check(attacks, "block_rate", True, s),
        _paired_check(benign, "false_positive_rate", False, s),
    ]
    checks.extend(_absolute(candidate, policy, s))
    if s.max_latency_ratio is not None:
        ratio, low, high, boot = latency_ratio(candidate, baseline, q=s.latency_quantile)
        p = None if boot.size == 0 else float(np.mean(boot >= s.max_latency_ratio))
        checks.append(
            _limit(
                "latency.ratio",
                f"per-call p{100 * s.latency_quantile:g} latency at most {s.max_latency_ratio:g}x"
                " the baseline's",
                ratio,
                high,
                s.max_latency_ratio,
                upper=True,
                s=s,
                unit="x",
                interval="upper bound of the 95% paired bootstrap interval",
                note="" if low is None else f"95% interval {low:.3f}–{high:.3f}",
            )
        )
        checks[-1] = _with_p(checks[-1], p)
    return GateResult(
        candidate=candidate.id,
        baseline=baseline.id,
        dataset=candidate.dataset.spec,
        content_hash=candidate.dataset.content_hash,
        policy=policy,
        settings=s,
        checks=tuple(checks),
        candidate_defense=DefenseIdentity.of(candidate.defense.spec, candidate.defense.version),
        baseline_defense=DefenseIdentity.of(baseline.defense.spec, baseline.defense.version),
    )


def _with_p(check: GateCheck, p: float | None) -> GateCheck:
    from dataclasses import replace

    return replace(check, p_value=p)
