"""One monitoring cycle: run every suite on every defense, store, compare, alert."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench.alerts import Alert, Cooldown, LogSink, Sink, TerminalSink, WebhookSink, deliver
from shieldbench.identity import DefenseIdentity
from shieldbench.monitor._config import MonitorConfig, Suite
from shieldbench.monitor._detect import Finding, compare_runs_for_drift
from shieldbench.monitor._profile import compare_profiles_for_drift
from shieldbench.store import Store
from shieldbench.types import Run

if TYPE_CHECKING:
    from shieldbench.benchmark import BenchmarkEvents
    from shieldbench.defenses import Defense
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


@dataclass(slots=True)
class _Tally:
    """What a cycle has done so far (frozen into a :class:`CycleReport` at the end)."""

    started: datetime
    runs: list[str] = field(default_factory=list)
    findings: list[tuple[str, str, Finding]] = field(default_factory=list)
    fired: list[Alert] = field(default_factory=list)
    suppressed: list[Alert] = field(default_factory=list)

    def report(self) -> CycleReport:
        return CycleReport(
            self.started,
            tuple(self.runs),
            tuple(self.findings),
            tuple(self.fired),
            tuple(self.suppressed),
        )


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

    Each (defense, suite) pair runs as a one-job benchmark
    (:func:`shieldbench.benchmark.run_benchmark`, in a folder that lives for the
    cycle, without reports); ``events`` hears its steps (default: nothing).
    """

    def __init__(
        self,
        config: MonitorConfig,
        store: Store,
        *,
        sinks: list[Sink],
        end_to_end: Callable[[], EndToEnd | None] | None = None,
        close_end_to_end: Callable[[EndToEnd | None], None] | None = None,
        events: BenchmarkEvents | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.sinks = sinks
        self.end_to_end = end_to_end
        self.close_end_to_end = close_end_to_end
        self.events = events
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
        self, spec: str, defense: Defense, suite: Suite, plan: EndToEnd | None, folder: Path
    ) -> Run:
        """One (defense, suite) pair as a one-job benchmark in ``folder`` (no reports)."""
        from shieldbench.benchmark import BenchmarkConfig, run_benchmark
        from shieldbench.datasets import load_dataset, sample_dataset

        data = load_dataset(suite.dataset)
        if suite.sample is not None:
            data = sample_dataset(data, suite.sample, seed=time.time_ns() % (2**31))
        config = BenchmarkConfig(
            defenses=(spec,),
            datasets=(suite.dataset,),
            run=self.config.run,
            end_to_end=None if plan is None else self.config.end_to_end,
        )
        result = run_benchmark(
            config,
            out=folder,
            reports=False,
            defenses={spec: defense},
            datasets={suite.dataset: data},
            plan=plan,
            events=self.events,
        )
        return result.runs[0]

    def cycle(self) -> CycleReport:
        """Run, store and compare every (defense, suite); alert on what got worse."""
        from shieldbench.defenses import build_defense, close_every

        tally = _Tally(datetime.now(UTC))
        plan = self.end_to_end() if self.end_to_end is not None else None
        # each pair is a one-job benchmark; its folder (run file, checkpoint) lives
        # for the cycle: the runs are kept in the store
        scratch = tempfile.TemporaryDirectory(prefix="shieldbench-monitor-")
        try:
            for spec in self.config.defenses:
                defense = build_defense(spec)
                try:
                    for suite in self.config.suites:
                        folder = Path(scratch.name) / f"{len(tally.runs):03d}"
                        run = self._run_suite(spec, defense, suite, plan, folder)
                        self.store.add_run(run, source="monitor", tags=self._tags(suite))
                        tally.runs.append(run.id)
                        self._compare(spec, suite, run, tally)
                finally:
                    close_every([defense])
        finally:
            scratch.cleanup()
            if self.close_end_to_end is not None:
                self.close_end_to_end(plan)
        return tally.report()

    def _compare(self, spec: str, suite: Suite, run: Run, tally: _Tally) -> None:
        """Compare ``run`` with each reference; send (or cool down) an alert per finding."""
        for comparison, refs in self._references(spec, suite, run):
            for compare in (compare_runs_for_drift, compare_profiles_for_drift):
                for f in compare(
                    run,
                    refs,
                    comparison=comparison,
                    alpha=self.config.alpha,
                    min_effect=self.config.min_effect,
                ):
                    tally.findings.append((spec, suite.name, f))
                    if f.alert:
                        alert = self._alert(spec, suite, run, f)
                        (tally.fired if self._send(alert) else tally.suppressed).append(alert)

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
