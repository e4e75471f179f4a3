"""Where alerts go: a webhook, a log, the terminal.

A sink's :meth:`~Sink.send` never raises: it answers a :class:`Delivery` saying
whether the alert got through, after how many attempts, and why not. A monitor
or service can therefore fan an alert out to every sink and store what happened
(:func:`deliver`), and a dead webhook never stops the loop.

The webhook POSTs :meth:`Alert.to_payload` as JSON (its ``text`` field makes it a
valid Slack / Mattermost / Teams incoming-webhook message). It retries connection
errors, timeouts, HTTP 429 and 5xx with exponential back-off (``backoff_s``,
doubled each retry, or the server's ``Retry-After`` when shorter than 60 s), and
gives up after ``retries`` extra attempts; each attempt is bounded by
``timeout_s``, so one delivery takes at most about
``(retries + 1) * timeout_s + backoff_s * (2 ** retries - 1)``. Other 4xx answers
are not retried (the request itself is wrong).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TextIO, runtime_checkable

import httpx

from shieldbench.alerts._record import Alert

__all__ = ["Delivery", "LogSink", "Sink", "TerminalSink", "WebhookSink", "deliver"]

_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "critical": logging.CRITICAL}


@dataclass(frozen=True, slots=True)
class Delivery:
    """What one sink did with one alert."""

    sink: str
    ok: bool
    attempts: int = 1
    status: int | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "attempts": self.attempts,
            "status": self.status,
            "error": self.error,
        }


@runtime_checkable
class Sink(Protocol):
    """Anything with a ``name`` and a ``send(alert) -> Delivery`` that never raises."""

    name: str

    def send(self, alert: Alert) -> Delivery: ...


class WebhookSink:
    """POST each alert as JSON to ``url`` (see the module doc for retries and timing)."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 5.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook url must start with http:// or https://, got {url!r}")
        if timeout_s <= 0 or retries < 0 or backoff_s < 0:
            raise ValueError("webhook timeout_s must be > 0, retries and backoff_s >= 0")
        self.url = url
        self.name = f"webhook:{httpx.URL(url).host}"
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self._headers = dict(headers or {})

    def _wait(self, attempt: int, response: httpx.Response | None) -> float:
        wait: float = self.backoff_s * 2.0 ** (attempt - 1)
        if response is not None:
            after = str(response.headers.get("retry-after", ""))
            if after.replace(".", "", 1).isdigit() and float(after) < 60:
                wait = float(after)
        return wait

    def send(self, alert: Alert) -> Delivery:
        body = alert.to_payload()
        status: int | None = None
        error: str | None = None
        with httpx.Client(timeout=self.timeout_s, headers=self._headers) as client:
            for attempt in range(1, self.retries + 2):
                response: httpx.Response | None = None
                try:
                    response = client.post(self.url, json=body)
                except httpx.HTTPError as exc:
                    status, error = None, f"{type(exc).__name__}: {exc}".rstrip(": ")
                else:
                    status = response.status_code
                    if status < 300:
                        return Delivery(self.name, True, attempt, status)
                    error = f"HTTP {status}"
                    if status < 500 and status != 429:
                        return Delivery(self.name, False, attempt, status, error)
                if attempt <= self.retries:
                    time.sleep(self._wait(attempt, response))
        return Delivery(self.name, False, self.retries + 1, status, error)


class LogSink:
    """Log each alert on ``logger`` (default ``shieldbench.alerts``) at its severity."""

    def __init__(self, logger: logging.Logger | str = "shieldbench.alerts") -> None:
        self.logger = logging.getLogger(logger) if isinstance(logger, str) else logger
        self.name = f"log:{self.logger.name}"

    def send(self, alert: Alert) -> Delivery:
        try:
            self.logger.log(
                _LEVELS[alert.severity], "%s", alert.text, extra={"alert": alert.to_payload()}
            )
        except Exception as exc:  # a broken handler must not stop the caller
            return Delivery(self.name, False, error=f"{type(exc).__name__}: {exc}")
        return Delivery(self.name, True)


class TerminalSink:
    """Write each alert as one line to ``stream`` (default: standard error)."""

    name = "terminal"

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream

    def send(self, alert: Alert) -> Delivery:
        stream = self._stream or sys.stderr
        try:
            stream.write(f"ALERT {alert.text}\n")
            stream.flush()
        except (OSError, ValueError) as exc:
            return Delivery(self.name, False, error=f"{type(exc).__name__}: {exc}")
        return Delivery(self.name, True)


def deliver(alert: Alert, sinks: Iterable[Sink]) -> dict[str, Delivery]:
    """Send ``alert`` to every sink, in order; what each did, by sink name."""
    return {sink.name: sink.send(alert) for sink in sinks}
