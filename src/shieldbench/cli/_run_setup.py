"""``run``'s options -> a :class:`~shieldbench.benchmark.BenchmarkConfig`.

The benchmark comes from the command line, a ``--config`` file, or (``run --out DIR
--resume`` alone) the folder's ``benchmark.json``
(:func:`~shieldbench.benchmark.resume_config`); the run-setting options override
it. :func:`explicit_settings` names the settings the user stated, which a resumed
benchmark must not contradict (its folder's manifest owns them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench.cli._guards import unique_specs
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

# The benchmark machinery is imported when ``run`` runs, not when its options are
# registered (``shieldbench --help`` does not load it).
if TYPE_CHECKING:
    from shieldbench.benchmark import BenchmarkConfig

__all__ = ["explicit_settings", "resolve_config"]


def _from_file(
    config_file: Path, defenses: Sequence[str], datasets: Sequence[str]
) -> BenchmarkConfig:
    from shieldbench.benchmark import load_config

    cfg = load_config(config_file)
    pairs = (("--defense", defenses, "defenses"), ("--dataset", datasets, "datasets"))
    for option, specs, key in pairs:
        if specs and tuple(specs) != getattr(cfg, key):
            raise ConfigError(
                f"{option} {', '.join(specs)} with --config {config_file}, which names"
                f" {key} {', '.join(getattr(cfg, key))}: edit the config's {key}: list,"
                " or drop --config and name every spec on the command line"
            )
    return cfg


def resolve_config(
    config_file: Path | None,
    defenses: Sequence[str],
    datasets: Sequence[str],
    overrides: Mapping[str, object],
    margin: float | None,
    *,
    resume_from: Path | None = None,
) -> BenchmarkConfig:
    """The benchmark the options ask for; a :class:`ConfigError` naming the option."""
    from shieldbench.benchmark import BenchmarkConfig, resume_config

    defenses = unique_specs(defenses, option="--defense")
    datasets = unique_specs(datasets, option="--dataset")
    if config_file is not None:
        cfg = _from_file(config_file, defenses, datasets)
    elif not defenses and not datasets and resume_from is not None:
        cfg = resume_config(resume_from)
    else:
        if not defenses or not datasets:
            raise ConfigError(
                "name at least one --defense and one --dataset, or a --config file;"
                " e.g. shieldbench run --defense pattern --dataset builtin:smoke"
            )
        cfg = BenchmarkConfig(defenses=tuple(defenses), datasets=tuple(datasets))
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        try:
            cfg = replace(cfg, run=replace(cfg.run, **given))  # type: ignore[arg-type]
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if margin is not None:
        try:
            cfg = replace(cfg, margin=margin)
        except ConfigError:
            raise ConfigError(f"--margin must be a number in (0, 0.5], got {margin:g}") from None
    return cfg


def explicit_settings(overrides: Mapping[str, object], config_file: Path | None) -> list[str]:
    """The run settings the user stated: a config file states every one."""
    if config_file is not None:
        return [f.name for f in fields(RunConfig)]
    return [k for k, v in overrides.items() if v is not None]
