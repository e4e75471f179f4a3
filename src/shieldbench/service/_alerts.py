"""Alert thresholds on the rolling window: checked periodically, posted, stored, cooled down.

Every ``every_s`` seconds the loop computes the stats over ``window_s`` and tests the
limits (see :func:`shieldbench.service._stats.breaches`). A breached check fires at
most once per ``cooldown_s``: it is appended to the audit log (``kind="alert"``),
counted in ``shieldbench_guard_alerts_total``, logged at WARNING and, when a webhook is
configured, posted as JSON with a Slack-compatible ``text`` field (two retries on 5xx
or a network error, 5 s timeout each; a failed post is logged, never fatal).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from shieldbench.service._audit import AuditWriter
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
        writer: AuditWriter,
        metrics: GuardMetrics,
    ) -> None:
        self._stats = stats
        self.thresholds = thresholds
        self._writer = writer
        self._metrics = metrics
        self._last_fired: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self.fired: list[dict[str, Any]] = []

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
                await self.check_once()
            except Exception as exc:  # the loop must survive a bad cycle
                _log.error("alert check failed: %s", exc)

    async def check_once(self, *, now: float | None = None) -> list[dict[str, Any]]:
        """Test the thresholds now; fire (and return) the breaches out of cool-down."""
        t = time.time() if now is None else now
        t_ = self.thresholds
        stats = await asyncio.to_thread(self._stats, t_.window_s)
        limits = {
            "min_recall": t_.min_recall,
            "max_fpr": t_.max_fpr,
            "max_p95_ms": t_.max_p95_ms,
            "max_error_rate": t_.max_error_rate,
        }
        fired = []
        for breach in breaches(stats, limits):
            last = self._last_fired.get(breach["check"])
            if last is not None and t - last < t_.cooldown_s:
                continue
            self._last_fired[breach["check"]] = t
            fired.append(await self._fire(breach, stats, t))
        return fired

    async def _fire(
        self, breach: dict[str, Any], stats: dict[str, Any], t: float
    ) -> dict[str, Any]:
        text = (
            f"shieldbench guard alert: {breach['check']} = {breach['value']:.4g}"
            f" (limit {breach['limit']:g}) over the last {stats['window_s']:g} s"
            f" for {stats['defense']['name']}"
        )
        alert = {
            "kind": "alert",
            "id": uuid.uuid4().hex,
            "created": t,
            "source": "guard",
            "text": text,
            **breach,
        }
        _log.warning("%s", text)
        self._metrics.alerts.labels(breach["check"]).inc()
        self._writer.submit_nowait(dict(alert))
        self.fired.append(alert)
        if self.thresholds.webhook:
            await _post(self.thresholds.webhook, alert)
        return alert


async def _post(url: str, alert: dict[str, Any]) -> None:
    async with httpx.AsyncClient(timeout=5.0) as client:
        for attempt in range(3):
            try:
                response = await client.post(url, json=alert)
                if response.status_code < 500:
                    return
            except httpx.HTTPError as exc:
                _log.error("webhook %s: %s", url, exc)
            await asyncio.sleep(0.5 * 2**attempt)
    _log.error("webhook %s: giving up after 3 attempts", url)
