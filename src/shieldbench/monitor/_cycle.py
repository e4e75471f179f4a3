"""One monitoring cycle: run every suite on every defense, store, compare, alert."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from shieldbench.alerts import Alert, Cooldown, LogSink, Sink, TerminalSink, WebhookSink, deliver
from shieldbench.identity import DefenseIdentity
from shieldbench.monitor._config import MonitorConfig, Suite
from shieldbench.monitor._detect import Finding, compare_runs_for_drift
from shieldbench.monitor._profile import compare_profiles_for_drift
from shieldbench.store import Store
from shieldbench.types import Run

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd

__all__ = ["CycleReport", "Monitor", "build_sinks"]


@dataclass(frozen=True, slots=True)
class CycleReport:
    """What one cycle did: the runs it stored, every finding, the alerts it raised."""

    started: datetime
    runs: tuple[str, ...]
    findings: tuple[tuple[str, str, Finding], ...]
    fired: tuple[Alert, ...]
    suppressed: tuple[Alert, ...]

    @property
    def healthy(self) -> bool:
        """No alert condition (a cooled-down alert still counts as unhealthy)."""
        return not self.fired and not self.suppressed


def build_sinks(config: MonitorConfig) -> list[Sink]:
    """The sinks a config names, in the order terminal, log, webhook."""
    sinks: list[Sink] = []
    s = config.sinks
    if s.terminal:
        sinks.append(TerminalSink())
    if s.log:
        logger = logging.getLogger("shieldbench.monitor")
        if s.log_file and not any(
            getattr(h, "baseFilename", None) == str(s.log_file) for h in logger.handlers
        ):
            handler = logging.FileHandler(s.log_file, encoding="utf-8")
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
        sinks.append(LogSink(logger))
    if s.webhook is not None:
        hook = dict(s.webhook)
        sinks.append(
            WebhookSink(
                str(hook["url"]),
                timeout_s=float(hook.get("timeout_s", 5.0)),
                retries=int(hook.get("retries", 3)),
                backoff_s=float(hook.get("backoff_s", 0.5)),
                headers=hook.get("headers"),
            )
        )
    return sinks


class Monitor:
    """Runs cycles of ``config`` against ``store``; alerts through ``sinks``.

    The cool-down reads the store, so alerts already sent by an earlier process
    (a cron job an hour ago) stay quiet too.

    ``end_to_end`` builds the end-to-end plan (target, judges) a cycle sends the
    defense's output through, and ``close_end_to_end`` closes it after the cycle
    (``shieldbench monitor`` builds both from the config's ``end_to_end:`` section).
    Its runs then carry a behavioural profile, compared with the same references
    (:func:`~shieldbench.monitor._profile.compare_profiles_for_drift`).
    """

    def __init__(
        self,
        config: MonitorConfig,
        store: Store,
        *,
        sinks: list[Sink],
        end_to_end: Callable[[], EndToEnd | None] | None = None,
        close_end_to_end: Callable[[EndToEnd | None], None] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.sinks = sinks
        self.end_to_end = end_to_end
        self.close_end_to_end = close_end_to_end
        self.cooldown = Cooldown(
            config.cooldown,
            last_fired=lambda key: store.last_alert_at(key, source="monitor"),
        )

    def _tags(self, suite: Suite) -> dict[str, str]:
        return {**self.config.tags, "monitor": self.config.name, "suite": suite.name}

    def _references(self, spec: str, suite: Suite, run: Run) -> list[tuple[str, list[Run]]]:
        c = self.config.compare
        need = max(1 if c.last else 0, c.window) + 1
        # Runs of this defense's canonical spec (matched as such, never by display
        # name): a threshold variant is another defense, never "the last run"; a new
        # version of this one is what the monitor is watching for.
        identity = DefenseIdentity.of(run.defense.spec, run.defense.version)
        mine = self.store.runs(defense=identity.spec, tags=self._tags(suite), limit=need)
        earlier = [r.id for r in reversed(mine) if r.id != run.id]
        loaded: dict[str, Run] = {}

        def get(run_id: str) -> Run:
            if run_id not in loaded:
                loaded[run_id] = self.store.get_run(run_id)
            return loaded[run_id]

        refs: list[tuple[str, list[Run]]] = []
        if c.last and earlier:
            refs.append(("last run", [get(earlier[0])]))
        if c.window and (len(earlier) > 1 or (not c.last and earlier)):  # one run: "last" says it
            refs.append((f"last {c.window} runs", [get(i) for i in earlier[: c.window]]))
        if c.baseline:
            base = self.store.resolve(
                c.baseline, dataset_hash=run.dataset.content_hash, identity=identity
            )
            refs.append((f"baseline {c.baseline}", [get(base)]))
        return refs

    def _run_suite(
        self, spec: str, defense: object, suite: Suite, plan: EndToEnd | None = None
    ) -> Run:
        from shieldbench.datasets import load_dataset, sample_dataset
        from shieldbench.engine import run_defense

        data = load_dataset(suite.dataset)
        if suite.sample is not None:
            data = sample_dataset(data, suite.sample, seed=time.time_ns() % (2**31))
        return run_defense(
            defense,  # type: ignore[arg-type]
            data,
            config=self.config.run,
            defense_spec=spec,
            end_to_end=plan,
        )

    def cycle(self) -> CycleReport:
        """Run, store and compare every (defense, suite); alert on what got worse."""
        from shieldbench.defenses import build_defense, close_every

        started = datetime.now(UTC)
        runs: list[str] = []
        findings: list[tuple[str, str, Finding]] = []
        fired: list[Alert] = []
        suppressed: list[Alert] = []
        plan = self.end_to_end() if self.end_to_end is not None else None
        try:
            for spec in self.config.defenses:
                defense = build_defense(spec)
                try:
                    for suite in self.config.suites:
                        run = self._run_suite(spec, defense, suite, plan)
                        self.store.add_run(run, source="monitor", tags=self._tags(suite))
                        runs.append(run.id)
                        for comparison, refs in self._references(spec, suite, run):
                            for compare in (compare_runs_for_drift, compare_profiles_for_drift):
                                for f in compare(
                                    run,
                                    refs,
                                    comparison=comparison,
                                    alpha=self.config.alpha,
                                    min_effect=self.config.min_effect,
                                ):
                                    findings.append((spec, suite.name, f))
                                    if f.alert:
                                        alert = self._alert(spec, suite, run, f)
                                        sent = self._send(alert)
                                        (fired if sent else suppressed).append(alert)
                finally:
                    close_every([defense])
        finally:
            if self.close_end_to_end is not None:
                self.close_end_to_end(plan)
        return CycleReport(started, tuple(runs), tuple(findings), tuple(fired), tuple(suppressed))

    def _alert(self, spec: str, suite: Suite, run: Run, f: Finding) -> Alert:
        comparison = f.comparison.split(" ")[0]
        if f.metric.startswith("profile."):
            what = f"the model's behavioural profile drifted ({f.metric[8:].replace('_', ' ')})"
        else:
            what = f"{f.metric.replace('_', ' ')} got worse"
        return Alert(
            key=f"{self.config.name}:{spec}@{suite.name}:{f.metric}:{comparison}",
            title=f"{spec} on {suite.name}: {what}",
            message=f.describe(),
            source="monitor",
            severity="critical" if f.metric == "block_rate" else "warning",
            details={
                **f.to_dict(),
                "defense": spec,
                "suite": suite.name,
                "dataset": run.dataset.spec,
                "content_hash": run.dataset.content_hash,
                "run": run.id,
            },
            run_id=run.id,
        )

    def _send(self, alert: Alert) -> bool:
        """Deliver and store ``alert`` unless it is cooling down; ``True`` when sent."""
        if not self.cooldown.allow(alert.key, now=alert.created):
            return False
        self.store.add_alert(alert, deliver(alert, self.sinks))
        return True
