"""The running service's parts, built once in the lifespan and reached through dependencies.

One process is one replica. On SQLite it writes the store's ``main`` chain (one server
process per store). On any other store it starts a chain of its own
(:func:`~shieldbench.service._journal.new_chain_id`; ``$SHIELDBENCH_REPLICA`` names
it), first moving in the journals dead replicas left on this host, so any number of
processes (``serve --workers N``, or ``serve`` on several hosts) share one store.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from shieldbench.defenses import Defense, build_defense
from shieldbench.errors import ConfigError
from shieldbench.service._alerts import AlertLoop
from shieldbench.service._audit import AuditStore
from shieldbench.service._config import ServeConfig
from shieldbench.service._guard import Guard
from shieldbench.service._journal import MAIN_CHAIN, new_chain_id
from shieldbench.service._prom import GuardMetrics
from shieldbench.service._screen import Screen
from shieldbench.service._stats import RollingWindow, quality, store_traffic
from shieldbench.service._warnq import WarnQueue
from shieldbench.service._writer import AuditWriter

__all__ = ["Defenses", "Service", "build_defenses"]

_log = logging.getLogger("shieldbench.service")


@dataclass(frozen=True, slots=True)
class Defenses:
    """The built defenses: inline, warn-only (dual mode), output screening."""

    inline: Defense
    warn: Defense | None = None
    output: Defense | None = None


def build_defenses(config: ServeConfig) -> Defenses:
    """Build every defense the configuration names (spec errors raise :class:`SpecError`;
    a ``stream_holdback_chars`` shorter than what the output defense can match, a
    :class:`ConfigError`)."""
    output = None if config.output_defense is None else build_defense(config.output_defense)
    declared = getattr(output, "max_match_chars", None)
    holdback = config.stream_holdback_chars
    if isinstance(declared, int) and holdback is not None and holdback < declared:
        raise ConfigError(
            f"stream_holdback_chars: {holdback} is shorter than what the output defense"
            f" {config.output_defense!r} can match ({declared} characters): a secret split"
            f" across stream events could be released in part; set it to {declared} or more"
        )
    if output is not None and declared is None and holdback is None:
        _log.warning(
            "output defense %r declares no max_match_chars: streamed answers are screened"
            " whole and released at their end; set stream_holdback_chars to stream them",
            config.output_defense,
        )
    return Defenses(
        inline=build_defense(config.defense),
        warn=None if config.warn is None else build_defense(config.warn),
        output=output,
    )


@dataclass
class Service:
    """Everything a request handler needs (one per app; no module globals)."""

    config: ServeConfig
    guard: Guard
    output: Screen | None
    store: AuditStore
    writer: AuditWriter
    metrics: GuardMetrics
    window: RollingWindow
    api_keys: tuple[bytes, ...]
    executors: tuple[ThreadPoolExecutor, ...]
    upstream: aiohttp.ClientSession | None = None
    alerts: AlertLoop | None = None
    started: float = field(default_factory=time.time)
    _retention: asyncio.Task[None] | None = None

    @classmethod
    def build(
        cls, config: ServeConfig, defenses: Defenses, *, api_keys: tuple[bytes, ...]
    ) -> Service:
        """Wire the parts together (the store is opened, its tables created if missing)."""
        store = AuditStore(config.db, recover=False)  # the writer replays, holding the lock
        try:
            chain = MAIN_CHAIN
            if store.backend != "sqlite":  # a replica: its own chain; dead ones' journals in
                chain = new_chain_id()
                store.recover()
            writer = AuditWriter(store, fsync_s=config.journal_fsync_s, chain=chain)
        except BaseException:
            store.close()
            raise
        _log.info("audit chain %s (replica)", chain)
        executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="shieldbench-defense")
        metrics, window = GuardMetrics(replica=chain), RollingWindow()

        def screen(defense: Defense) -> Screen:
            return Screen(
                defense,
                timeout_s=config.timeout_s,
                window_s=config.dedup_window_s,
                executor=executor,
            )

        guard = Guard(
            config, screen(defenses.inline), warn=None, audit=writer, metrics=metrics, window=window
        )
        if defenses.warn is not None:
            # Its own queue and threads: a slow warn defense never delays an inline check.
            guard.warn = WarnQueue(
                defenses.warn,
                on_results=guard.warned,
                timeout_s=config.warn_timeout_s,
                max_pending=config.max_pending_warn,
                window_s=config.dedup_window_s,
            )
        output = None if defenses.output is None else screen(defenses.output)
        service = cls(
            config=config,
            guard=guard,
            output=output,
            store=store,
            writer=writer,
            metrics=metrics,
            window=window,
            api_keys=api_keys,
            executors=(executor,),
        )
        if config.alerts.enabled:
            service.alerts = AlertLoop(service.stats, config.alerts, store, metrics)
        return service

    async def warm_up(self) -> None:
        """Open the upstream pool; one check through each defense (models load lazily); ready."""
        if self.config.upstream:
            # aiohttp, not httpx: ~0.25 ms of CPU per request on 2 cores against several ms
            # for httpx.AsyncClient under concurrency (see the comment in pyproject.toml).
            self.upstream = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=5.0, sock_read=self.config.upstream_timeout_s
                ),
                connector=aiohttp.TCPConnector(limit=256),
                auto_decompress=False,
            )
        for screen in (self.guard.inline, self.output):
            if screen is not None:
                await screen.screen("shieldbench warm-up: hello")
        if self.guard.warn is not None:
            await self.guard.warn.start()
        # What exists now (modules, app, models) lives as long as the process: frozen, a
        # full collection no longer walks it (tens of ms otherwise, charged to a request).
        gc.collect()
        gc.freeze()
        self.guard.ready = True
        if self.alerts is not None:
            self.alerts.start()
        if self.config.retention_days is not None:
            self._retention = asyncio.get_running_loop().create_task(self._retain())

    async def _retain(self) -> None:
        """Retention by age: prune at start, then hourly (a retention record is chained)."""
        assert self.config.retention_days is not None
        while True:
            try:
                deleted = await asyncio.to_thread(
                    self.store.prune, self.config.retention_days * 86400, chain=self.writer.submit
                )
                if deleted:
                    _log.info("retention: deleted %d audit record(s)", deleted)
            except Exception as exc:
                _log.error("retention failed: %s", exc)
            await asyncio.sleep(3600)

    def stats(self, window_s: float) -> dict[str, Any]:
        """The rolling metrics document of ``GET /v1/stats``: ``traffic`` is this
        replica's (latency needs its own clock), ``store`` counts every replica's
        decisions in the store, ``quality`` is every replica's feedback."""
        since = time.time() - window_s
        labelled = self.store.labelled(since=since)
        return {
            "window_s": window_s,
            "replica": self.writer.chain,
            "defense": {"name": self.guard.inline.name, "version": self.guard.inline.version},
            "mode": self.config.mode,
            "traffic": self.window.traffic(window_s),
            "store": store_traffic(self.store.decision_counts(since=since)),
            "quality": quality(labelled.values()),
        }

    async def close(self) -> None:
        """Graceful shutdown: warn checks finish, the audit log is flushed, pools closed."""
        if self.alerts is not None:
            await self.alerts.stop()
        if self._retention is not None:
            self._retention.cancel()
        await self.guard.drain()
        await asyncio.to_thread(self.writer.close)
        if self.upstream is not None:
            await self.upstream.close()
        for executor in self.executors:
            executor.shutdown(wait=False, cancel_futures=True)
        self.store.close()
        _log.info("shutdown complete: %d audit record(s) written", self.writer.written)
