"""The monitor's YAML configuration: strict, every key known, every value checked.

Example ``monitor.yaml``::

    name: nightly                    # tags every run monitor=nightly
    defenses: [pattern]
    suites:
      - name: known                  # the same samples every cycle: paired tests
        dataset: builtin:core
      - name: novel                  # a fresh seeded sample every cycle: two-sample tests
        dataset: builtin:core
        sample: 200
    run: {timeout_s: 30, concurrency: 8}
    compare: {last: true, window: 5, baseline: "tag:release=1.2"}
    alpha: 0.05
    min_effect: {block_rate: 0.05, false_positive_rate: 0.02, latency_ratio: 1.5,
                 error_rate: 0.05}
    cooldown: 24h
    sinks:
      terminal: true
      log: {file: monitor.log}
      webhook: {url: "https://hooks.slack.com/...", timeout_s: 5, retries: 3, backoff_s: 1}
    end_to_end:                      # optional: the defense's output goes to a model
      target: openai:gpt-4o-mini     # (same keys as a benchmark config's end_to_end:)
      judges: [refusal, leak]

An end-to-end monitor also compares the model's behavioural profile over the benign
answers (refusal, leak, secret and PII rates, answer length, language mix) with the
same references, and alerts on a drift (see :mod:`shieldbench.monitor._profile`);
``min_effect.profile_rate`` (5 points, either direction) and ``profile_length`` (mean
answer length in characters, 0 = any significant change) set the smallest drift.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from shieldbench.config import _end_to_end
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

__all__ = [
    "CompareSettings",
    "MinEffect",
    "MonitorConfig",
    "SinkSettings",
    "Suite",
    "load_monitor_config",
    "parse_duration",
]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, *, where: str = "duration") -> timedelta:
    """``"90s"``, ``"30m"``, ``"24h"``, ``"7d"``, ``"1h30m"``.

    Example:
        >>> parse_duration("1h30m")
        datetime.timedelta(seconds=5400)
    """
    value = str(text).strip().lower()
    parts = _DURATION.findall(value)
    if not parts or _DURATION.sub("", value).strip():
        raise ConfigError(f"{where} {text!r}: write a duration such as 90s, 30m, 24h or 7d")
    return timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in parts))


@dataclass(frozen=True, slots=True)
class Suite:
    """A dataset to re-run: all of it, or a fresh seeded ``sample`` of it each cycle."""

    name: str
    dataset: str
    sample: int | None = None


@dataclass(frozen=True, slots=True)
class CompareSettings:
    """What each run is compared with: the last run, a window of the last N, a baseline."""

    last: bool = True
    window: int = 0
    baseline: str | None = None


@dataclass(frozen=True, slots=True)
class MinEffect:
    """The smallest change worth an alert (the seeds' rule of thumb: 5 points of block rate)."""

    block_rate: float = 0.05
    false_positive_rate: float = 0.02
    latency_ratio: float = 1.5
    error_rate: float = 0.05
    profile_rate: float = 0.05
    profile_length: float = 0.0


@dataclass(frozen=True, slots=True)
class SinkSettings:
    terminal: bool = True
    log: bool = False
    log_file: str | None = None
    webhook: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class MonitorConfig:
    name: str
    defenses: tuple[str, ...]
    suites: tuple[Suite, ...]
    run: RunConfig = field(default_factory=RunConfig)
    compare: CompareSettings = field(default_factory=CompareSettings)
    alpha: float = 0.05
    min_effect: MinEffect = field(default_factory=MinEffect)
    cooldown: timedelta = timedelta(hours=24)
    sinks: SinkSettings = field(default_factory=SinkSettings)
    tags: Mapping[str, str] = field(default_factory=dict)
    db: str | None = None
    source: str = "<config>"
    end_to_end: Mapping[str, Any] | None = None


def _keys(data: Any, known: set[str], where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    return data


def _number(value: Any, where: str, *, low: float, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"[{low:g}, {high:g}]" if high is not None else f">= {low:g}"
        raise ConfigError(f"{where}: {value!r} is out of range ({bound})")
    return float(value)


def _suite(item: Any, where: str) -> Suite:
    data = _keys(item, {"name", "dataset", "sample"}, where)
    if not isinstance(data.get("dataset"), str):
        raise ConfigError(f"{where}: 'dataset' (a dataset spec) is required")
    sample = data.get("sample")
    if sample is not None and (
        isinstance(sample, bool) or not isinstance(sample, int) or sample < 1
    ):
        raise ConfigError(f"{where}.sample: expected a positive integer, got {sample!r}")
    return Suite(str(data.get("name") or data["dataset"]), data["dataset"], sample)


def _sinks(data: Any, where: str) -> SinkSettings:
    d = _keys(data, {"terminal", "log", "webhook"}, where)
    log = d.get("log", False)
    log_file = None
    if isinstance(log, dict):
        log_file = str(_keys(log, {"file"}, f"{where}.log").get("file") or "") or None
        log = True
    hook = d.get("webhook")
    if hook is not None:
        hook = _keys(
            hook, {"url", "timeout_s", "retries", "backoff_s", "headers"}, f"{where}.webhook"
        )
        if not str(hook.get("url", "")).startswith(("http://", "https://")):
            raise ConfigError(f"{where}.webhook.url: an http(s) URL is required")
    return SinkSettings(bool(d.get("terminal", True)), bool(log), log_file, hook)


def _parse(data: Any, where: str) -> MonitorConfig:
    known = {
        "name",
        "defenses",
        "suites",
        "run",
        "compare",
        "alpha",
        "min_effect",
        "cooldown",
        "sinks",
        "tags",
        "db",
        "end_to_end",
    }
    d = _keys(data, known, where)
    defenses = d.get("defenses")
    if (
        not isinstance(defenses, list)
        or not defenses
        or not all(isinstance(x, str) for x in defenses)
    ):
        raise ConfigError(f"{where}: 'defenses' must be a non-empty list of defense specs")
    suites = d.get("suites")
    if not isinstance(suites, list) or not suites:
        raise ConfigError(f"{where}: 'suites' must be a non-empty list of {{name, dataset}}")
    parsed = tuple(_suite(s, f"{where}: suites[{i}]") for i, s in enumerate(suites))
    run_data = _keys(d.get("run") or {}, set(RunConfig.__dataclass_fields__), f"{where}: run")
    try:
        run = RunConfig.from_dict(run_data)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{where}: run: {error}") from None
    c = _keys(d.get("compare") or {}, {"last", "window", "baseline"}, f"{where}: compare")
    window = int(_number(c.get("window", 0), f"{where}: compare.window", low=0))
    compare = CompareSettings(bool(c.get("last", True)), window, c.get("baseline"))
    if not (compare.last or compare.window or compare.baseline):
        raise ConfigError(f"{where}: compare: enable last, a window or a baseline")
    m = _keys(
        d.get("min_effect") or {}, set(MinEffect.__dataclass_fields__), f"{where}: min_effect"
    )
    effect = MinEffect(**{k: _number(v, f"{where}: min_effect.{k}", low=0) for k, v in m.items()})
    tags = d.get("tags") or {}
    if not isinstance(tags, dict):
        raise ConfigError(f"{where}: tags must be a mapping of KEY: VALUE")
    e2e = _end_to_end(d.get("end_to_end"), where)
    if e2e is not None and not e2e.get("judges"):
        raise ConfigError(f"{where}: end_to_end.judges: an end-to-end monitor needs a judge")
    return MonitorConfig(
        name=str(d.get("name") or "monitor"),
        defenses=tuple(defenses),
        suites=parsed,
        run=run,
        compare=compare,
        alpha=_number(d.get("alpha", 0.05), f"{where}: alpha", low=1e-9, high=0.5),
        min_effect=effect,
        cooldown=parse_duration(d.get("cooldown", "24h"), where=f"{where}: cooldown"),
        sinks=_sinks(d.get("sinks") or {}, f"{where}: sinks"),
        tags={str(k): str(v) for k, v in tags.items()},
        db=d.get("db"),
        source=where,
        end_to_end=e2e,
    )


def load_monitor_config(path: str | Path) -> MonitorConfig:
    """Read and check a monitor config; :class:`ConfigError` naming the file and key."""
    source = Path(path)
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{source}: no such monitor config") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}{line}: not valid YAML") from None
    return _parse(data, str(source))
