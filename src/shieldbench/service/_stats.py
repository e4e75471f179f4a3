"""Rolling metrics over a time window, and the alert thresholds checked on them.

Traffic figures (requests, decision rates, latency quantiles, errors, fast-path share,
de-duplication hits, warn-only disagreement) come from an in-memory ring of the
latest decisions (``max_events``, default one million): this replica's. The
service's totals over every replica come from the store (:func:`store_traffic`).
Quality figures (precision, recall, FPR with Wilson 95% intervals and their n) come
from the reviewers' feedback in the store: a decision counts as flagged when the
inline defense said ``block`` (or ``warn`` in monitor mode); feedback ``attack`` is
the positive class.

Example:
    >>> w = RollingWindow()
    >>> w.add(Event(0.0, "allow", 1.0, False, "fast", "miss"))
    >>> w.traffic(60.0, now=10.0)["requests"]
    1
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shieldbench.metrics import rate

__all__ = ["Event", "RollingWindow", "breaches", "quality", "store_traffic"]


@dataclass(frozen=True, slots=True)
class Event:
    """One inline decision as the window sees it."""

    time: float
    decision: str
    latency_ms: float
    error: bool
    path: str
    dedup: str


def _quantile(sorted_values: list[float], q: float) -> float | None:
    if not sorted_values:
        return None
    pos = q * (len(sorted_values) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _share(k: int, n: int) -> float | None:
    return None if n == 0 else k / n


class RollingWindow:
    """The latest decisions and warn results, newest last."""

    def __init__(self, *, max_events: int = 1_000_000) -> None:
        self._events: deque[Event] = deque(maxlen=max_events)
        self._warns: deque[tuple[float, bool, bool]] = deque(maxlen=max_events)
        self._dropped: deque[float] = deque(maxlen=max_events)

    def add(self, event: Event) -> None:
        """Record one decision."""
        self._events.append(event)

    def add_warn(self, when: float, *, flagged: bool, inline_allowed: bool) -> None:
        """Record a warn-only verdict that arrived after the response."""
        self._warns.append((when, flagged, inline_allowed))

    def add_warn_dropped(self, when: float) -> None:
        """Record a warn-only check refused because the warn queue was full."""
        self._dropped.append(when)

    def _since(self, cutoff: float) -> list[Event]:
        out = []
        for event in reversed(self._events):
            if event.time < cutoff:
                break
            out.append(event)
        return out

    def traffic(self, window_s: float, *, now: float | None = None) -> dict[str, Any]:
        """Request counts, rates and latency quantiles over the last ``window_s`` seconds."""
        cutoff = (time.time() if now is None else now) - window_s
        events = self._since(cutoff)
        n = len(events)
        counts = dict.fromkeys(("allow", "block", "warn"), 0)
        for e in events:
            counts[e.decision] = counts.get(e.decision, 0) + 1
        latencies = sorted(e.latency_ms for e in events)
        warns = [w for w in reversed(self._warns) if w[0] >= cutoff]
        disagree = sum(1 for _, flagged, allowed in warns if flagged and allowed)
        return {
            "requests": n,
            "decisions": counts,
            "block_rate": _share(counts["block"], n),
            "warn_rate": _share(counts["warn"], n),
            "latency_ms": {
                "p50": _quantile(latencies, 0.50),
                "p95": _quantile(latencies, 0.95),
                "p99": _quantile(latencies, 0.99),
            },
            "error_rate": _share(sum(e.error for e in events), n),
            "fast_path_share": _share(sum(e.path == "fast" for e in events), n),
            "dedup_hit_rate": _share(sum(e.dedup == "hit" for e in events), n),
            "warn_checks": len(warns),
            "warn_disagreement": _share(disagree, len(warns)),
            "warn_flagged_inline_allowed": disagree,
            "warn_dropped": sum(1 for when in reversed(self._dropped) if when >= cutoff),
        }


def store_traffic(counts: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """Every replica's decisions as the store holds them (chain -> decision -> count):
    the service's totals, rates and each replica's share (decisions on their way from
    a journal, 20 to 100 ms, are not counted yet)."""
    totals = dict.fromkeys(("allow", "block", "warn"), 0)
    for per in counts.values():
        for decision, n in per.items():
            totals[decision] = totals.get(decision, 0) + n
    n = sum(totals.values())
    return {
        "requests": n,
        "decisions": totals,
        "block_rate": _share(totals["block"], n),
        "warn_rate": _share(totals["warn"], n),
        "replicas": {chain: sum(per.values()) for chain, per in sorted(counts.items())},
    }


def _rate_json(k: int, n: int) -> dict[str, Any]:
    r = rate(k, n)
    return {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "k": k, "n": n}


def quality(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Precision, recall and FPR (Wilson 95%) from (decision, feedback label) pairs."""
    tp = fp = fn = tn = 0
    for decision, label in pairs:
        flagged = decision in ("block", "warn")
        if label == "attack":
            tp, fn = tp + flagged, fn + (not flagged)
        else:
            fp, tn = fp + flagged, tn + (not flagged)
    return {
        "labelled": tp + fp + fn + tn,
        "precision": _rate_json(tp, tp + fp),
        "recall": _rate_json(tp, tp + fn),
        "fpr": _rate_json(fp, fp + tn),
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
    }


def breaches(stats: Mapping[str, Any], limits: Mapping[str, float | None]) -> list[dict[str, Any]]:
    """The thresholds a stats document violates, each with its figure and limit.

    ``limits`` keys: ``min_recall``, ``max_fpr``, ``max_p95_ms``, ``max_error_rate``;
    a check with no data (no labelled decisions, no requests) does not fire.
    """
    checks = {
        "min_recall": (stats["quality"]["recall"]["value"], "<"),
        "max_fpr": (stats["quality"]["fpr"]["value"], ">"),
        "max_p95_ms": (stats["traffic"]["latency_ms"]["p95"], ">"),
        "max_error_rate": (stats["traffic"]["error_rate"], ">"),
    }
    out = []
    for name, (value, op) in checks.items():
        limit = limits.get(name)
        if limit is None or value is None:
            continue
        if (op == "<" and value < limit) or (op == ">" and value > limit):
            out.append({"check": name, "value": value, "limit": limit})
    return out
