"""Alert sinks against a real loopback webhook: body, retries with back-off, timeouts."""

from __future__ import annotations

import io
import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from tests._webhook import WebhookReceiver

from shieldbench.alerts import Alert, Cooldown, LogSink, TerminalSink, WebhookSink, deliver

ALERT = Alert(
    "nightly:pattern@core:block_rate:last",
    "pattern on core: block rate got worse",
    "91.0% -> 80.0%",
    severity="critical",
    details={"p_value": 0.001},
    created=datetime(2026, 3, 1, tzinfo=UTC),
)


def test_the_webhook_receives_a_slack_compatible_json_body(webhook: WebhookReceiver) -> None:
    result = WebhookSink(webhook.url).send(ALERT)
    assert result.ok
    assert result.attempts == 1
    assert result.status == 200
    (body,) = webhook.bodies
    assert body["text"] == "[critical] pattern on core: block rate got worse: 91.0% -> 80.0%"
    assert body["key"] == ALERT.key
    assert body["details"] == {"p_value": 0.001}
    assert body["created"] == "2026-03-01T00:00:00+00:00"


def test_5xx_is_retried_with_exponential_backoff(webhook: WebhookReceiver) -> None:
    webhook.fail_next = 2
    result = WebhookSink(webhook.url, retries=3, backoff_s=0.2).send(ALERT)
    assert result.ok
    assert result.attempts == 3
    assert len(webhook.bodies) == 1
    gaps = [b - a for a, b in zip(webhook.attempts, webhook.attempts[1:], strict=False)]
    assert gaps[0] >= 0.2
    assert gaps[1] >= 0.4


def test_giving_up_says_why(webhook: WebhookReceiver) -> None:
    webhook.fail_next = 10
    result = WebhookSink(webhook.url, retries=1, backoff_s=0.01).send(ALERT)
    assert not result.ok
    assert (result.attempts, result.status, result.error) == (2, 503, "HTTP 503")
    assert webhook.bodies == []


def test_a_slow_webhook_times_out_instead_of_hanging(webhook: WebhookReceiver) -> None:
    webhook.delay_s = 2.0
    start = time.monotonic()
    result = WebhookSink(webhook.url, timeout_s=0.2, retries=1, backoff_s=0.05).send(ALERT)
    elapsed = time.monotonic() - start
    assert not result.ok
    assert result.error is not None
    assert "Timeout" in result.error
    assert elapsed < 1.5


def test_an_unreachable_webhook_is_a_delivery_failure_not_an_exception() -> None:
    result = WebhookSink("http://127.0.0.1:9/hook", retries=0, timeout_s=1).send(ALERT)
    assert not result.ok
    assert result.status is None
    assert result.error


def test_terminal_and_log_sinks(caplog: pytest.LogCaptureFixture) -> None:
    out = io.StringIO()
    logger = logging.getLogger("test.alerts")
    with caplog.at_level(logging.INFO, logger="test.alerts"):
        results = deliver(ALERT, [TerminalSink(out), LogSink(logger)])
    assert all(r.ok for r in results.values())
    assert out.getvalue() == f"ALERT {ALERT.text}\n"
    assert caplog.records[0].levelno == logging.CRITICAL
    assert caplog.records[0].getMessage() == ALERT.text


def test_cooldown_is_per_key() -> None:
    c = Cooldown(timedelta(minutes=10))
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    assert c.allow("a", now=t0)
    assert c.allow("b", now=t0)
    assert not c.allow("a", now=t0 + timedelta(minutes=9))
    assert c.remaining("a", now=t0 + timedelta(minutes=9)) == timedelta(minutes=1)
    with pytest.raises(ValueError, match="must be >= 0"):
        Cooldown(timedelta(seconds=-1))
