"""Prometheus metrics of one service instance (its own registry, so apps never collide).

Names: ``shieldbench_guard_requests_total{decision,defense,endpoint}``,
``shieldbench_guard_latency_seconds{defense}`` (histogram, inline decision time),
``shieldbench_guard_errors_total{defense,kind}`` (defense errors and timeouts),
``shieldbench_guard_dedup_total{result}``, ``shieldbench_guard_warn_total{result}``,
``shieldbench_guard_output_total{decision}``, ``shieldbench_guard_gateway_errors_total{kind}``,
``shieldbench_guard_alerts_total{check}``, ``shieldbench_guard_fail_open_total``.

Every sample also carries ``replica``: the chain id of the process that counted it
(``main`` for the single SQLite server), so the series of N replicas scraped behind
one service never collide; sum over ``replica`` for the service's totals.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

__all__ = ["GuardMetrics"]

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class GuardMetrics:
    """Counters and histograms; :meth:`scrape` renders the text exposition format."""

    def __init__(self, *, replica: str = "main") -> None:
        self.replica = replica
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "shieldbench_guard_requests",
            "Inline decisions, by decision, defense and endpoint.",
            ["decision", "defense", "endpoint"],
            registry=r,
        )
        self.latency = Histogram(
            "shieldbench_guard_latency_seconds",
            "Time to decide (preprocessing, de-duplication, defense, audit commit).",
            ["defense"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "shieldbench_guard_errors",
            "Inline defense errors and timeouts.",
            ["defense", "kind"],
            registry=r,
        )
        self.dedup = Counter(
            "shieldbench_guard_dedup", "De-duplication hits and misses.", ["result"], registry=r
        )
        self.warn = Counter(
            "shieldbench_guard_warn",
            "Warn-only verdicts: flagged, clear, error; disagree = flagged what inline allowed.",
            ["result"],
            registry=r,
        )
        self.output = Counter(
            "shieldbench_guard_output",
            "Output screening decisions on upstream answers.",
            ["decision"],
            registry=r,
        )
        self.gateway_errors = Counter(
            "shieldbench_guard_gateway_errors",
            "Upstream failures seen by the proxy.",
            ["kind"],
            registry=r,
        )
        self.alerts = Counter(
            "shieldbench_guard_alerts", "Alerts fired, by check.", ["check"], registry=r
        )
        self.fail_open = Counter(
            "shieldbench_guard_fail_open", "Requests allowed because of --fail-open.", registry=r
        )

    def scrape(self) -> bytes:
        """The exposition text of every metric, each sample labelled with ``replica``."""
        return generate_latest(_Labelled(self.registry, self.replica))


class _Labelled:
    """A registry's metrics with one more label on every sample (what ``scrape`` renders)."""

    def __init__(self, registry: CollectorRegistry, replica: str) -> None:
        self._registry = registry
        self._replica = replica

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            metric.samples = [
                s._replace(labels={**s.labels, "replica": self._replica}) for s in metric.samples
            ]
            yield metric
