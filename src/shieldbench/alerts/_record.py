"""The :class:`Alert` record and the :class:`Cooldown` that keeps it from repeating."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, Literal, get_args

__all__ = ["SEVERITIES", "Alert", "AlertSeverity", "Cooldown"]

AlertSeverity = Literal["info", "warning", "critical"]
SEVERITIES: tuple[str, ...] = get_args(AlertSeverity)


@dataclass(frozen=True, slots=True)
class Alert:
    """Something a person should look at, and why.

    ``key`` identifies *the same* alert across cycles (e.g.
    ``"pattern@builtin:core:block_rate:last"``): the cool-down and the history use
    it. ``source`` says who raised it (``"monitor"``, ``"service"``, ...).
    ``details`` holds the JSON-ready facts that triggered it (metric, values,
    test, p-value, run ids); ``run_id`` the run it is about, when there is one.

    Example:
        >>> a = Alert("k", "Block rate dropped", "pattern: 91% -> 80%", source="monitor")
        >>> a.to_payload()["text"]
        '[warning] Block rate dropped: pattern: 91% -> 80%'
    """

    key: str
    title: str
    message: str
    source: str = "monitor"
    severity: AlertSeverity = "warning"
    details: Mapping[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    created: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"Alert.severity must be one of {SEVERITIES}, got {self.severity!r}")
        if not self.key:
            raise ValueError("Alert.key must not be empty (the cool-down needs it)")
        if self.created.tzinfo is None:
            raise ValueError("Alert.created needs a time zone")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def text(self) -> str:
        """One line for a terminal, a log or a chat message."""
        return f"[{self.severity}] {self.title}: {self.message}"

    def to_payload(self) -> dict[str, Any]:
        """The webhook body: Slack-compatible ``text`` plus every field."""
        return {
            "text": self.text,
            "key": self.key,
            "title": self.title,
            "message": self.message,
            "source": self.source,
            "severity": self.severity,
            "run_id": self.run_id,
            "created": self.created.isoformat(),
            "details": dict(self.details),
        }


class Cooldown:
    """Lets an alert ``key`` fire at most once per ``period``.

    ``last_fired`` looks up when a key last fired outside this process (e.g. the
    history store's :meth:`~shieldbench.store.Store.last_alert_at`), so a monitor
    started from cron every hour still honours a day-long cool-down; without it the
    memory of this object is all there is. Thread-safe.

    Example:
        >>> from datetime import timedelta
        >>> c = Cooldown(timedelta(hours=1))
        >>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
        >>> c.allow("k", now=t0), c.allow("k", now=t0 + timedelta(minutes=5))
        (True, False)
        >>> c.allow("k", now=t0 + timedelta(hours=2))
        True
    """

    def __init__(
        self,
        period: timedelta,
        *,
        last_fired: Callable[[str], datetime | None] | None = None,
    ) -> None:
        if period < timedelta(0):
            raise ValueError(f"a cool-down period must be >= 0, got {period}")
        self.period = period
        self._lookup = last_fired
        self._fired: dict[str, datetime] = {}
        self._lock = threading.Lock()

    def _remaining(self, key: str, moment: datetime) -> timedelta:
        last = self._fired.get(key)
        if last is None and self._lookup is not None:
            last = self._lookup(key)
        if last is None:
            return timedelta(0)
        return max(timedelta(0), last + self.period - moment)

    def remaining(self, key: str, *, now: datetime | None = None) -> timedelta:
        """How long ``key`` stays silenced (zero when it may fire)."""
        with self._lock:
            return self._remaining(key, now or datetime.now(UTC))

    def allow(self, key: str, *, now: datetime | None = None) -> bool:
        """``True`` (and the key is marked fired at ``now``) unless it is cooling down."""
        moment = now or datetime.now(UTC)
        with self._lock:
            if self._remaining(key, moment) > timedelta(0):
                return False
            self._fired[key] = moment
            return True
