"""Operational figures of a run: per-call latency, throughput and errors.

- **Per-call latency** is what one caller waits for one text: it is taken over ok
  outcomes with a measured ``latency_ms``, which the engine records only for a
  one-text call on a text the defense had not seen (caches bypassed, warm-up on
  other texts); in a batched run that is a seeded sample of the texts, called one at
  a time, and ``n`` says how many. Errors and timeouts are counted separately (a
  timeout's latency is the time limit, not the defense's speed). Percentiles use
  linear interpolation (:func:`numpy.quantile`); their intervals are
  distribution-free order-statistic intervals
  (:func:`~shieldbench.metrics.quantile_interval`), and a bound that ``n`` cannot
  give is ``None`` with its reason in :meth:`LatencyStats.unbounded`. With no
  timed outcome every figure is ``None``. They are exact at any size: a large run's
  percentiles come from radix selection over its latency column read a block at a
  time (:mod:`shieldbench.metrics._order_stats`), never from an array of every
  latency.
- **Throughput**: ``batch_ms_per_text`` is the amortised cost per text in batches
  (the summed wall time of the run's ``check_batch`` calls over the texts they
  screened, from the run's ``environment``; ``None`` for a run without batches);
  ``samples_per_s`` is outcomes over the run's wall time (what the engine achieved,
  concurrency, warm-up and the per-call sample included; ``None`` for a zero
  duration); ``calls_per_s_per_worker`` is ``1000 / mean per-call latency``, the
  rate of one sequential caller.
- Errors: counts by status (``error``, ``timeout``) and by error type (the text
  before the first ``:`` of the outcome's ``error``, e.g. ``ConnectTimeout``).

Example:
    >>> from shieldbench.metrics._testing import make_run
    >>> run = make_run([("c", True, True), ("c", False, None)], latency_ms=2.0)
    >>> lat = latency_stats(run)
    >>> lat.n, lat.mean_ms, lat.p50.value
    (1, 2.0, 2.0)
    >>> error_counts(run).by_type
    {'RuntimeError': 1}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from shieldbench.metrics._columnar import bad_outcomes, columnar, latency_blocks
from shieldbench.metrics._intervals import Estimate, missing_bound_reason
from shieldbench.metrics._order_stats import Blocks, quantile_estimates
from shieldbench.types import Run

__all__ = [
    "ErrorCounts",
    "LatencyStats",
    "Throughput",
    "error_counts",
    "latency_stats",
    "throughput",
]


@dataclass(frozen=True, slots=True)
class LatencyStats:
    """Per-call latency in milliseconds (one text a call): mean, max and p50 / p95 / p99."""

    n: int
    mean_ms: float | None
    max_ms: float | None
    p50: Estimate
    p95: Estimate
    p99: Estimate

    MEASURE = "per-call latency: one text per call, caches bypassed, warm-up excluded"

    def unbounded(self) -> dict[str, str]:
        """``{"p99_ms": reason, ...}`` for each percentile with a bound ``n`` cannot give."""
        found = {
            key: missing_bound_reason(e, q)
            for key, e, q in (("p50_ms", self.p50, 0.5), ("p95_ms", self.p95, 0.95),
                              ("p99_ms", self.p99, 0.99))
        }  # fmt: skip
        return {k: v for k, v in found.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "measure": self.MEASURE,
            "n": self.n,
            "mean_ms": self.mean_ms,
            "max_ms": self.max_ms,
            "p50_ms": self.p50.to_dict(),
            "p95_ms": self.p95.to_dict(),
            "p99_ms": self.p99.to_dict(),
            "unbounded": self.unbounded(),
        }


def latency_stats(run: Run, *, confidence: float = 0.95) -> LatencyStats:
    """Latency figures of ``run`` (see the module doc).

    Exact and in bounded memory: a columnar run's latencies are read a block at a
    time and the percentiles found by radix selection
    (:func:`~shieldbench.metrics._order_stats.quantile_estimates`); a run held as
    objects goes through the same code with one block.
    """
    if columnar(run):
        blocks: Blocks = partial(latency_blocks, run)
    else:
        values = np.asarray(
            [o.latency_ms for o in run.outcomes if o.status == "ok" and o.latency_ms is not None],
            dtype=float,
        )
        blocks = partial(iter, [values])
    n, mean, top, (p50, p95, p99) = quantile_estimates(
        blocks, (0.5, 0.95, 0.99), confidence=confidence
    )
    return LatencyStats(n, mean, top, p50, p95, p99)


@dataclass(frozen=True, slots=True)
class Throughput:
    """Amortised cost per text in batches; samples per second over the run and per caller."""

    samples_per_s: float | None
    calls_per_s_per_worker: float | None
    wall_time_s: float
    batch_ms_per_text: float | None = None
    batched_texts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples_per_s": self.samples_per_s,
            "calls_per_s_per_worker": self.calls_per_s_per_worker,
            "wall_time_s": self.wall_time_s,
            "batch_ms_per_text": self.batch_ms_per_text,
            "batched_texts": self.batched_texts,
        }


def throughput(run: Run, *, latency: LatencyStats | None = None) -> Throughput:
    """Throughput of ``run``; pass its :class:`LatencyStats` to avoid recomputing them."""
    lat = latency_stats(run) if latency is None else latency
    wall = run.duration_s
    per_s = len(run.outcomes) / wall if wall > 0 else None
    per_worker = 1000.0 / lat.mean_ms if lat.mean_ms else None
    batch_ms, batched = _batch_cost(run.environment)
    return Throughput(per_s, per_worker, wall, batch_ms, batched)


def _batch_cost(environment: Mapping[str, str]) -> tuple[float | None, int]:
    """``(batch_ms_per_text, batched_texts)`` the engine recorded; ``(None, 0)`` if absent.

    >>> _batch_cost({"batch_ms_per_text": "7.5", "batched_texts": "64"}), _batch_cost({})
    ((7.5, 64), (None, 0))
    """
    try:
        texts = int(environment.get("batched_texts", "0"))
        cost = float(environment["batch_ms_per_text"]) if texts > 0 else None
    except (KeyError, ValueError):
        return None, 0
    return (cost, texts) if cost is not None and math.isfinite(cost) else (None, 0)


@dataclass(frozen=True, slots=True)
class ErrorCounts:
    """Non-ok outcomes by status and by error type, and what the policy did with them."""

    total: int
    by_status: dict[str, int] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)
    policy: str = "fail_closed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_status": dict(self.by_status),
            "by_type": dict(self.by_type),
            "policy": self.policy,
        }


def _error_type(error: str | None, status: str) -> str:
    if not error:
        return status
    head = error.split(":", 1)[0].strip()
    return head or status


def error_counts(run: Run) -> ErrorCounts:
    """Count the run's errors and timeouts (the policy is recorded, not applied here)."""
    bad = bad_outcomes(run) if columnar(run) else [o for o in run.outcomes if o.status != "ok"]
    by_status = Counter(o.status for o in bad)
    by_type = Counter(_error_type(o.error, o.status) for o in bad)
    return ErrorCounts(
        len(bad),
        dict(sorted(by_status.items())),
        dict(by_type.most_common()),
        run.config.error_policy,
    )
