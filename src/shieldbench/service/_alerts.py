"""Alert thresholds on the rolling window: checked periodically, delivered, stored, cooled down.

Every ``every_s`` seconds the loop computes the stats over ``window_s`` and tests the
limits (see :func:`shieldbench.service._stats.breaches`). A breached check is an
:class:`~shieldbench.alerts.Alert` (``source="service"``, key
``guard:<defense>:<check>``) that fires at most once per ``cooldown_s`` (the
cool-down also reads the store, so a restart does not re-fire): it is delivered to
the log and, when configured, the webhook sink (JSON with a Slack-compatible
``text``; retries on 5xx with backoff), stored in the history's ``alerts`` table
with its deliveries, and counted in ``shieldbench_guard_alerts_total``.

Replicas: each runs this loop. Recall and FPR are judged on the store's feedback (every
replica's), p95 latency and the error rate on the replica's own traffic (a slow or
failing replica is not averaged away). Testing the cool-down, delivering and recording
happen under :meth:`~shieldbench.service._audit.AuditStore.alert_lock` on the key, so
replicas that see one breach together fire it once per cool-down for the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from shieldbench.alerts import Alert, Cooldown, LogSink, Sink, WebhookSink, deliver
from shieldbench.service._audit import AuditStore
from shieldbench.service._config import AlertThresholds
from shieldbench.service._prom import GuardMetrics
from shieldbench.service._stats import breaches

__all__ = ["AlertLoop"]

_log = logging.getLogger("shieldbench.service.alerts")


class AlertLoop:
    """The periodic check (see the module docstring)."""

    def __init__(
        self,
        stats: Callable[[float], dict[str, Any]],
        thresholds: AlertThresholds,
        store: AuditStore,
        metrics: GuardMetrics,
    ) -> None:
        self._stats = stats
        self.thresholds = thresholds
        self._store = store
        self._metrics = metrics
        self._cooldown = Cooldown(
            timedelta(seconds=thresholds.cooldown_s), last_fired=store.last_alert_at
        )
        self._sinks: list[Sink] = [LogSink(_log)]
        if thresholds.webhook:
            self._sinks.append(WebhookSink(thresholds.webhook))
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the periodic task on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """Cancel the periodic task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.thresholds.every_s)
            try:
                await asyncio.to_thread(self.check_once)
            except Exception as exc:  # the loop must survive a bad cycle
                _log.error("alert check failed: %s", exc)

    def check_once(self) -> list[Alert]:
        """Test the thresholds now; fire (and return) the breaches out of cool-down."""
        t = self.thresholds
        stats = self._stats(t.window_s)
        limits = {
            "min_recall": t.min_recall,
            "max_fpr": t.max_fpr,
            "max_p95_ms": t.max_p95_ms,
            "max_error_rate": t.max_error_rate,
        }
        fired = []
        for breach in breaches(stats, limits):
            key = f"guard:{stats['defense']['name']}:{breach['check']}"
            # One replica at a time per key: the others wait, then find it in cool-down.
            with self._store.alert_lock(key):
                if self._cooldown.allow(key):
                    fired.append(self._fire(key, breach, stats))
        return fired

    def _fire(self, key: str, breach: dict[str, Any], stats: dict[str, Any]) -> Alert:
        """Deliver the alert of one breach, store it and count it."""
        alert = Alert(
            key,
            f"guard {breach['check']} breached",
            f"{breach['check']} = {breach['value']:.4g} (limit {breach['limit']:g})"
            f" over the last {stats['window_s']:g} s for {stats['defense']['name']}",
            source="service",
            details={**breach, "window_s": stats["window_s"], "defense": stats["defense"]},
        )
        delivered = deliver(alert, self._sinks)
        self._store.add_alert_delivered(alert, delivered)
        self._metrics.alerts.labels(breach["check"]).inc()
        return alert
