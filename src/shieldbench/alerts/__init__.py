"""Alerts: the record, the sinks that carry it, and the cool-down that keeps it quiet.

Used by ``shieldbench monitor`` and by the guard service; stored by
:meth:`shieldbench.store.Store.add_alert` (table ``alerts``, with its ``source``).

Example:
    >>> import io
    >>> from datetime import timedelta
    >>> alert = Alert("pattern:block_rate", "Block rate dropped", "91.0% -> 80.2%")
    >>> out = io.StringIO()
    >>> cooldown = Cooldown(timedelta(hours=6))
    >>> if cooldown.allow(alert.key):
    ...     result = deliver(alert, [TerminalSink(out)])
    >>> out.getvalue()
    'ALERT [warning] Block rate dropped: 91.0% -> 80.2%\\n'
    >>> cooldown.allow(alert.key)
    False
"""

from __future__ import annotations

from shieldbench.alerts._record import SEVERITIES, Alert, AlertSeverity, Cooldown
from shieldbench.alerts._sinks import (
    Delivery,
    LogSink,
    Sink,
    TerminalSink,
    WebhookSink,
    deliver,
)

__all__ = [
    "SEVERITIES",
    "Alert",
    "AlertSeverity",
    "Cooldown",
    "Delivery",
    "LogSink",
    "Sink",
    "TerminalSink",
    "WebhookSink",
    "deliver",
]
