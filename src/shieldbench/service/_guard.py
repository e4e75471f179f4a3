"""The decision path: preprocess, screen (deduplicated, with a timeout), decide, audit.

:meth:`Guard.check` is what every endpoint calls. The answer goes out only after its
audit record is chained and written to the audit journal, from where it reaches the
store within milliseconds (see :mod:`~shieldbench.service._writer`; unless
``audit=False``: the scores-only endpoint). In dual
mode the warn-only defense is started as a background task once the inline decision
is made; it never delays the answer, and its verdict is appended to the audit log as
its own record (``kind="warn"``) and counted. :meth:`Guard.drain` awaits those tasks
(graceful shutdown).

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
from shieldbench.service._writer import AuditWriter

__all__ = ["Decision", "Guard"]

_log = logging.getLogger("shieldbench.service")
_PREVIEW = 48
_ASCII_DIGITS = str.maketrans("0123456789", "#" * 10)


class _Ids:
    """Record ids: a random per-process prefix and a counter, 32 hex digits like a UUID.

    ``uuid.uuid4`` reads ``os.urandom`` on every call, a system call that releases the
    interpreter's lock; with the audit thread busy, getting it back cost up to
    milliseconds a request. Ids need to be unique, not secret (feedback takes an API key).
    """

    def __init__(self) -> None:
        self._prefix = os.urandom(8).hex()
        self._count = itertools.count(1)

    def __call__(self) -> str:
        return f"{self._prefix}{next(self._count):016x}"


new_id = _Ids()


def redact(text: str) -> str:
    """A short preview: the first characters with digits masked, then the length."""
    head = text[:_PREVIEW]
    if head.isascii():  # the common case, ~20x faster than the loop
        head = head.translate(_ASCII_DIGITS)
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
        warn: Screen | None,
        audit: AuditWriter,
        metrics: GuardMetrics,
        window: RollingWindow,
    ) -> None:
        self.config = config
        self.inline = inline
        self.warn_screen = warn
        self.audit = audit
        self.metrics = metrics
        self.window = window
        self._tasks: set[asyncio.Task[None]] = set()
        self._children: dict[tuple[str, str, str, str], tuple[Any, Any, Any]] = {}
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
        start = time.perf_counter()
        cleaned, fired = preprocess(text, strip=self.config.strip)
        result = await self.inline.screen(cleaned)
        decision, blocked, reasons = self._decide(result)
        verdict = result.verdict
        path = str(verdict.details.get("path", "fast")) if verdict is not None else "fast"
        warn_state = "none"
        if self.warn_screen is not None:
            warn_state = "skipped" if decision != "allow" else "pending"
            if warn_state == "pending" and len(self._tasks) >= self.config.max_pending_warn:
                warn_state = "dropped"  # backlog full: counted, never queued without bound
                self.metrics.warn.labels("dropped").inc()
        fields: dict[str, Any] = {
            "id": new_id(),
            "decision": decision,
            "blocked": blocked,
            "score": None if verdict is None else verdict.score,
            "label": None if verdict is None else verdict.label,
            "reasons": reasons,
            "path": path,
            "dedup": result.dedup,
            "defense": {"name": self.inline.name, "version": self.inline.version},
            "warn": warn_state if audit else "none",
            "stripped": fired,
            "error": result.error,
        }
        if audit:  # journalled before the answer (an OSError here refuses the answer)
            self.audit.submit(self._body(fields, text, cleaned, endpoint, metadata))
        latency_ms = (time.perf_counter() - start) * 1000
        out = Decision(latency_ms=round(latency_ms, 3), **fields)
        self._count(out, endpoint, latency_ms)
        if audit and warn_state == "pending":
            self._spawn(self._warn(out.id, cleaned))
        return out

    def _body(
        self,
        fields: dict[str, Any],
        text: str,
        cleaned: str,
        endpoint: str,
        metadata: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """The audit record: the answer's fields (but its latency) and what else is kept."""
        body = {
            **fields,
            "reasons": list(fields["reasons"]),
            "stripped": list(fields["stripped"]),
            "defense": dict(fields["defense"]),
            "kind": "decision",
            "created": time.time(),
            "endpoint": endpoint,
            "text_hash": text_hash(text),
            "preview": redact(cleaned),
            "chars": len(text),
            "mode": self.config.mode,
            "metadata": dict(metadata or {}),
        }
        if self.config.store_text:
            body["text"] = text
        return body

    def _count(self, out: Decision, endpoint: str, latency_ms: float) -> None:
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

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _warn(self, decision_id: str, text: str) -> None:
        assert self.warn_screen is not None
        result = await self.warn_screen.screen(text)
        flagged = result.verdict is not None and result.verdict.blocked
        state = "error" if result.verdict is None else ("flagged" if flagged else "clear")
        self.metrics.warn.labels(state).inc()
        if flagged:
            self.metrics.warn.labels("disagree").inc()
        self.window.add_warn(time.time(), flagged=flagged, inline_allowed=True)
        self._submit(
            {
                "kind": "warn",
                "id": new_id(),
                "ref": decision_id,
                "created": time.time(),
                "warn": state,
                "flagged_inline_allowed": flagged,
                "score": None if result.verdict is None else result.verdict.score,
                "reasons": [] if result.verdict is None else list(result.verdict.reasons),
                "error": result.error,
                "latency_ms": round(result.defense_ms, 3),
                "defense": {"name": self.warn_screen.name, "version": self.warn_screen.version},
            }
        )

    def _submit(self, body: dict[str, Any]) -> None:
        self.audit.submit_later(body)  # nobody waits for it: chained off the event loop

    async def record(self, body: dict[str, Any]) -> None:
        """Append another record (gateway errors, output screening) to the audit log."""
        body.setdefault("id", new_id())
        body.setdefault("created", time.time())
        self.audit.submit(body)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Await pending warn checks (graceful shutdown)."""
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=timeout_s)
