"""Alerts over replicas: a breach of a store-wide threshold fires once for the service.

Every replica runs the alert loop over the same store, so a recall or FPR breach
(judged on every reviewer's feedback) is seen by all of them at once. On PostgreSQL a
replica takes a database lock on the alert's key before it tests the cool-down,
delivers and records the alert, so the replicas that race on one breach fire it once.
The webhook answers slowly here (0.3 s): without the lock, both replicas would be past
the cool-down test while the first delivery is still in flight.
"""

from __future__ import annotations

import threading
from typing import Any

from tests._webhook import WebhookReceiver

from shieldbench.service import AlertThresholds, AuditStore
from shieldbench.service._alerts import AlertLoop
from shieldbench.service._prom import GuardMetrics
from shieldbench.store import open_store


def _recall_breach(window_s: float) -> dict[str, Any]:
    """A stats document whose feedback says recall is 0.5 (the store-wide figure)."""
    rate = {"value": 0.5, "ci_low": 0.1, "ci_high": 0.9, "k": 1, "n": 2}
    return {
        "window_s": window_s,
        "defense": {"name": "pattern", "version": "1"},
        "quality": {"recall": rate, "fpr": {**rate, "value": None}},
        "traffic": {"latency_ms": {"p95": None}, "error_rate": None},
    }


def test_replicas_racing_on_one_breach_fire_it_once(
    postgres_url: str, webhook: WebhookReceiver
) -> None:
    webhook.delay_s = 0.3
    thresholds = AlertThresholds(min_recall=0.9, cooldown_s=3600.0, webhook=webhook.url)
    stores = [AuditStore(postgres_url) for _ in range(3)]
    loops = [
        AlertLoop(_recall_breach, thresholds, store, GuardMetrics(replica=f"r{i}"))
        for i, store in enumerate(stores)
    ]
    fired: list[int] = []
    start = threading.Barrier(len(loops))

    def replica(loop: AlertLoop) -> None:
        start.wait()
        for _ in range(3):  # later cycles: the cool-down holds across replicas
            fired.append(len(loop.check_once()))

    try:
        threads = [threading.Thread(target=replica, args=(loop,)) for loop in loops]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        for store in stores:
            store.close()
    assert sum(fired) == 1, fired
    assert len(webhook.bodies) == 1
    with open_store(postgres_url) as store:
        stored = store.alerts(source="service")
    assert [a.alert.key for a in stored] == ["guard:pattern:min_recall"]
