"""``run``'s benchmark settings and its output folder's manifest.

The settings come from the command line, a ``--config`` file, or (``run --out DIR
--resume`` alone) the folder's ``benchmark.json``; :func:`prepare_out` writes that
manifest for a new benchmark, or checks a resumed one against it so every pair of a
benchmark runs with the same settings.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.cli._guards import unique_specs
from shieldbench.config import BenchmarkConfig, load_config
from shieldbench.errors import ConfigError, RunError
from shieldbench.locking import LOCK_NAME
from shieldbench.types import RunConfig

__all__ = ["MANIFEST", "prepare_out", "resolve_config"]

MANIFEST = "benchmark.json"


def resolve_config(
    config_file: Path | None,
    defenses: Sequence[str],
    datasets: Sequence[str],
    overrides: dict[str, object],
    margin: float | None,
    *,
    resume_from: Path | None = None,
) -> BenchmarkConfig:
    defenses = unique_specs(defenses, option="--defense")
    datasets = unique_specs(datasets, option="--dataset")
    if config_file is not None:
        cfg = load_config(config_file)
        pairs = (("--defense", defenses, "defenses"), ("--dataset", datasets, "datasets"))
        for option, specs, key in pairs:
            if specs and tuple(specs) != getattr(cfg, key):
                raise ConfigError(
                    f"{option} {', '.join(specs)} with --config {config_file}, which names"
                    f" {key} {', '.join(getattr(cfg, key))}: edit the config's {key}: list,"
                    " or drop --config and name every spec on the command line"
                )
    elif not defenses and not datasets and resume_from is not None:
        cfg = _from_manifest(resume_from)
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
        cfg = replace(cfg, margin=margin)
    return cfg


def _from_manifest(folder: Path) -> BenchmarkConfig:
    """The specs of the benchmark in ``folder`` (``run --out DIR --resume`` alone)."""
    path = folder / MANIFEST
    if not path.exists():
        raise RunError(f"{path}: nothing to resume here (no {MANIFEST})")
    try:
        old = json.loads(read_text_input(path, error=RunError, what=MANIFEST))
        return BenchmarkConfig(
            defenses=tuple(old["defenses"]),
            datasets=tuple(old["datasets"]),
            margin=float(old.get("margin", 0.1)),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(f"{path}: not a readable benchmark manifest ({exc})") from None


def _manifest(cfg: BenchmarkConfig, benchmark_id: str) -> dict[str, object]:
    return {
        "kind": "shieldbench.benchmark",
        "schema_version": 1,
        "id": benchmark_id,
        "defenses": list(cfg.defenses),
        "datasets": list(cfg.datasets),
        "run": cfg.run.to_dict(),
        "margin": cfg.margin,
    }


def prepare_out(
    cfg: BenchmarkConfig, out: Path | None, resume: bool, *, explicit: Sequence[str] = ()
) -> tuple[Path, str, BenchmarkConfig]:
    """The output folder, the benchmark id (new, or the resumed one's) and the config.

    On ``--resume`` the run settings stored in ``benchmark.json`` are used, so every
    pair of the benchmark runs (and is reported) with the same ones; a setting in
    ``explicit`` (given on the command line or in a config file) that differs from
    the stored one is an error rather than a silent mix.
    """
    target = out or cfg.out
    if resume:
        if target is None:
            raise ConfigError(
                "--resume needs the folder of the interrupted benchmark: pass --out DIR"
                " (the path printed when it started)"
            )
        manifest_path = target / MANIFEST
        if not manifest_path.exists():
            raise RunError(f"{manifest_path}: nothing to resume here (no {MANIFEST})")
        try:
            old = json.loads(read_text_input(manifest_path, error=RunError, what=MANIFEST))
        except json.JSONDecodeError as exc:
            raise RunError(f"{manifest_path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(old, dict) or not isinstance(old.get("id"), str):
            raise RunError(f"{manifest_path}: not a shieldbench benchmark manifest")
        for key in ("defenses", "datasets"):
            if old.get(key) != list(getattr(cfg, key)):
                raise RunError(
                    f"{manifest_path}: the interrupted benchmark ran {key} {old.get(key)};"
                    f" this command asks for {list(getattr(cfg, key))}. Resume with the same"
                    " specs, or start a new benchmark without --resume."
                )
        try:
            stored = RunConfig.from_dict(old.get("run") or {})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunError(f"{manifest_path}: bad run settings ({exc})") from None
        changed = [
            f"{key}={getattr(stored, key)!r} (asked: {getattr(cfg.run, key)!r})"
            for key in explicit
            if getattr(stored, key) != getattr(cfg.run, key)
        ]
        if changed:
            raise RunError(
                f"{manifest_path}: the interrupted benchmark ran with {', '.join(changed)};"
                " resume without changing the run settings (the stored ones are used),"
                " or start a new benchmark without --resume."
            )
        return target, str(old["id"]), replace(cfg, run=stored)
    from shieldbench.engine import new_run_id

    benchmark_id = new_run_id()
    target = target or Path("reports") / benchmark_id
    if (target / MANIFEST).exists():
        raise RunError(
            f"{target} already holds a benchmark; pass --resume to continue it,"
            " or choose another --out"
        )
    if target.is_dir() and any(p.name != LOCK_NAME for p in target.iterdir()):
        raise RunError(
            f"--out {target}: the folder holds other files and no benchmark; run writes"
            " reports and run files there, so choose a new or empty folder"
        )
    write_text_atomic(target / MANIFEST, json.dumps(_manifest(cfg, benchmark_id), indent=1) + "\n")
    return target, benchmark_id, cfg
