"""The decision path: preprocess, screen (deduplicated, with a timeout), decide, audit.

:meth:`Guard.check` is what every endpoint calls (the ``/v1/check`` fast path calls its
two halves, :meth:`Guard.decide` and, once the answer is sent, :meth:`Guard.count`,
the metrics). The answer goes out only after its
audit record is chained and written to the audit journal, from where it reaches the
store within milliseconds (see :mod:`~shieldbench.service._writer`; unless
``audit=False``: the scores-only endpoint). In dual
mode the text of an allowed decision is appended to the warn queue once the inline
decision is made (:mod:`~shieldbench.service._warnq`: a deque append, nothing else on
the request path); background workers check it in batches, and each verdict is
appended to the audit log as its own record (``kind="warn"``) and counted, in bulk
per batch. :meth:`Guard.drain` lets the queue empty (graceful shutdown).

Decisions: ``block`` (the inline defense flagged the text, or failed while
fail-closed), ``allow``, or ``warn`` (flagged in ``mode: monitor``, which never
blocks). ``blocked`` is what the caller must enforce.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from shieldbench.service._config import ServeConfig
from shieldbench.service._preprocess import preprocess
from shieldbench.service._prom import GuardMetrics
from shieldbench.service._screen import Screen, ScreenResult, text_hash
from shieldbench.service._stats import Event, RollingWindow
from shieldbench.service._warnq import WarnOutcome, WarnQueue
from shieldbench.service._writer import AuditWriter

__all__ = ["Decision", "Guard"]

_log = logging.getLogger("shieldbench.service")
_PREVIEW = 48
_ASCII_DIGITS = bytes.maketrans(b"0123456789", b"#" * 10)


class _Ids:
    """Record ids: a random per-process prefix and a counter, 32 hex digits like a UUID.

    ``uuid.uuid4`` reads ``os.urandom`` on every call, a system call that releases the
    interpreter's lock; with the audit thread busy, getting it back cost up to
    milliseconds a request. Ids need to be unique, not secret (feedback takes an API key).
    """

    def __init__(self) -> None:
        self._reseed()
        # A forked child (``serve --workers``) draws a prefix of its own: ids made by
        # two workers must never collide (the store keeps them unique).
        os.register_at_fork(after_in_child=self._reseed)

    def _reseed(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return f"{self._prefix}{next(self._count):016x}"


new_id = _Ids()


def redact(text: str) -> str:
    """A short preview: the first characters with digits masked, then the length."""
    head = text[:_PREVIEW]
    if head.isascii():  # the common case, ~20x faster than the loop (bytes: a table lookup)
        head = head.encode("ascii").translate(_ASCII_DIGITS).decode("ascii")
    else:
        head = "".join("#" if c.isdigit() else c for c in head)
    return f"{head}… ({len(text)} chars)" if len(text) > _PREVIEW else head


@dataclass(frozen=True, slots=True)
class Decision:
    """One answer of the guard (the JSON of ``/v1/check``)."""

    id: str
    decision: str
    blocked: bool
    score: float | None
    label: str | None
    reasons: tuple[str, ...]
    latency_ms: float
    path: str
    dedup: str
    defense: dict[str, str | None]
    warn: str
    stripped: tuple[str, ...]
    error: str | None = None

    def to_bytes(self) -> bytes:
        """The response body as JSON bytes (orjson; the json module for what it refuses)."""
        data = self.to_json()
        try:
            return orjson.dumps(data)
        except TypeError:
            return json.dumps(data).encode()  # ASCII: a lone surrogate as an escape

    def to_json(self) -> dict[str, Any]:
        """The response body (written out: ``dataclasses.asdict`` deep-copies, ~10x slower)."""
        return {
            "id": self.id,
            "decision": self.decision,
            "blocked": self.blocked,
            "score": self.score,
            "label": self.label,
            "reasons": list(self.reasons),
            "latency_ms": self.latency_ms,
            "path": self.path,
            "dedup": self.dedup,
            "defense": dict(self.defense),
            "warn": self.warn,
            "stripped": list(self.stripped),
            "error": self.error,
        }


class Guard:
    """Inline screen + optional warn-only screen + audit + metrics (see the module doc)."""

    def __init__(
        self,
        config: ServeConfig,
        inline: Screen,
        *,
        warn: WarnQueue | None,
        audit: AuditWriter,
        metrics: GuardMetrics,
        window: RollingWindow,
    ) -> None:
        self.config = config
        self.inline = inline
        self.warn = warn
        self.audit = audit
        self.metrics = metrics
        self.window = window
        self._children: dict[tuple[str, str, str, str], tuple[Any, Any, Any]] = {}
        # One dict for every decision (nothing changes it; ``to_json`` copies it).
        self._defense = {"name": inline.name, "version": inline.version}
        self.ready = False

    def _decide(self, result: ScreenResult) -> tuple[str, bool, tuple[str, ...]]:
        cfg = self.config
        if result.verdict is None:
            reason = f"fail_{'open' if cfg.fail_open else 'closed'}:{result.error}"
            if cfg.fail_open:
                self.metrics.fail_open.inc()
                _log.error("FAIL-OPEN BYPASS: inline defense failed (%s); allowed", result.error)
                return "allow", False, (reason,)
            flagged = True
            reasons: tuple[str, ...] = (reason,)
        else:
            flagged = result.verdict.blocked
            reasons = tuple(result.verdict.reasons)
        if not flagged:
            return "allow", False, reasons
        if cfg.mode == "monitor":
            return "warn", False, reasons
        return "block", True, reasons

    async def check(
        self,
        text: str,
        *,
        endpoint: str = "check",
        metadata: Mapping[str, Any] | None = None,
        audit: bool = True,
    ) -> Decision:
        """Screen ``text`` and return the decision (after its audit record is journalled)."""
        out = await self.decide(text, endpoint=endpoint, metadata=metadata, audit=audit)
        self.count(out, endpoint)
        return out

    async def decide(
        self,
        text: str,
        *,
        endpoint: str = "check",
        metadata: Mapping[str, Any] | None = None,
        audit: bool = True,
    ) -> Decision:
        """:meth:`check` but the metrics: what the answer must wait for (the decision
        and its journalled audit record). The caller then calls :meth:`count`; the fast
        path does so once the answer is sent (the metrics are not part of the answer)."""
        start = time.perf_counter()
        cleaned, fired = preprocess(text, strip=self.config.strip)
        digest = text_hash(text)  # the audit record's; the screen's key when nothing was stripped
        key = text_hash(cleaned) if fired else digest
        result = self.inline.screen_now(cleaned, key=key)  # no coroutine for inline / cached
        if result is None:
            result = await self.inline.screen(cleaned, key=key)
        decision, blocked, reasons = self._decide(result)
        verdict = result.verdict
        path = str(verdict.details.get("path", "fast")) if verdict is not None else "fast"
        warn_state = "none"
        warn = self.warn
        if warn is not None and audit:
            warn_state = "skipped" if decision != "allow" else "pending"
            if warn_state == "pending" and warn.full():
                warn_state = "dropped"  # backlog full: counted, never queued without bound
                self.metrics.warn.labels("dropped").inc()
                self.window.add_warn_dropped(time.time())
        ident, defense = new_id(), self._defense
        score = None if verdict is None else verdict.score
        label = None if verdict is None else verdict.label
        if audit:  # journalled before the answer (an OSError here refuses the answer)
            # The record: the answer's fields (but its latency) and what else is kept; the
            # tuples are written as JSON arrays, and nothing changes the dicts after.
            body: dict[str, Any] = {
                "id": ident,
                "decision": decision,
                "blocked": blocked,
                "score": score,
                "label": label,
                "reasons": reasons,
                "path": path,
                "dedup": result.dedup,
                "defense": defense,
                "warn": warn_state,
                "stripped": fired,
                "error": result.error,
                "kind": "decision",
                "created": time.time(),
                "endpoint": endpoint,
                "text_hash": digest,
                "preview": redact(cleaned),
                "chars": len(text),
                "mode": self.config.mode,
                "metadata": dict(metadata) if metadata else {},
            }
            if self.config.store_text:
                body["text"] = text
            self.audit.submit(body)
        latency_ms = round((time.perf_counter() - start) * 1000, 3)
        out = Decision(  # positional: the frozen dataclass's keyword path costs more
            ident,
            decision,
            blocked,
            score,
            label,
            reasons,
            latency_ms,
            path,
            result.dedup,
            defense,
            warn_state,
            fired,
            result.error,
        )
        if warn_state == "pending":
            assert warn is not None
            warn.offer(out.id, cleaned)  # nothing awaited between full() and here: accepted
        return out

    def count(self, out: Decision, endpoint: str) -> None:
        """Count a decision of :meth:`decide` in the metrics and the rolling window."""
        latency_ms = out.latency_ms
        m = self.metrics
        key = (out.decision, str(out.defense["name"]), endpoint, out.dedup)
        children = self._children.get(key)
        if children is None:  # a few dozen combinations at most: looked up once each
            children = self._children[key] = (
                m.requests.labels(key[0], key[1], endpoint),
                m.latency.labels(key[1]),
                m.dedup.labels(out.dedup),
            )
        requests, latency, dedup = children
        requests.inc()
        latency.observe(latency_ms / 1000)
        dedup.inc()
        if out.error is not None:
            m.errors.labels(out.defense["name"], out.error.split(":", 1)[0]).inc()
        self.window.add(
            Event(time.time(), out.decision, latency_ms, out.error is not None, out.path, out.dedup)
        )

    def warned(self, outcomes: list[WarnOutcome]) -> None:
        """Count and record a batch of warn-only verdicts (on the event loop, one call a batch)."""
        assert self.warn is not None
        defense = {"name": self.warn.name, "version": self.warn.version}
        now = time.time()
        counts = {"flagged": 0, "clear": 0, "error": 0}
        for outcome in outcomes:
            verdict = outcome.verdict
            flagged = verdict is not None and verdict.blocked
            state = "error" if verdict is None else ("flagged" if flagged else "clear")
            counts[state] += 1
            self.window.add_warn(now, flagged=flagged, inline_allowed=True)
            self._submit(
                {
                    "kind": "warn",
                    "id": new_id(),
                    "ref": outcome.decision_id,
                    "created": now,
                    "warn": state,
                    "flagged_inline_allowed": flagged,
                    "score": None if verdict is None else verdict.score,
                    "reasons": [] if verdict is None else list(verdict.reasons),
                    "error": outcome.error,
                    "latency_ms": round(outcome.defense_ms, 3),
                    "dedup": "hit" if outcome.cached else "miss",
                    "defense": defense,
                }
            )
        for state, n in counts.items():
            if n:
                self.metrics.warn.labels(state).inc(n)
        if counts["flagged"]:
            self.metrics.warn.labels("disagree").inc(counts["flagged"])

    def _submit(self, body: dict[str, Any]) -> None:
        self.audit.submit_later(body)  # nobody waits for it: chained off the event loop

    async def record(self, body: dict[str, Any]) -> None:
        """Append another record (gateway errors, output screening) to the audit log."""
        body.setdefault("id", new_id())
        body.setdefault("created", time.time())
        self.audit.submit(body)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Let the warn queue empty (graceful shutdown); what is still queued at the
        deadline is recorded as a warn ``error`` naming the shutdown, never dropped."""
        if self.warn is None:
            return
        left = await asyncio.to_thread(self.warn.close, timeout_s)
        if left:
            error = f"error: shutdown: not checked within the {timeout_s:g} s drain"
            _log.error("%d warn-only check(s) not run before shutdown: recorded", len(left))
            self.warned([WarnOutcome(decision_id, None, error, 0.0) for decision_id, _ in left])
