"""The output folder of a benchmark: its manifest, run files, checkpoints and reports.

A benchmark writes into one folder::

    benchmark.json                 what was asked (specs, run settings, margin,
                                   end-to-end settings and canary), so a resume
                                   can check it continues the same benchmark
    runs/NN-<defense>--<dataset>.json|.parquet   one run file per pair
    checkpoints/NN-....jsonl       the outcomes of a pair in progress
    report.md, report.html, ...    the reports (see shieldbench.reports)

:func:`prepare_folder` writes the manifest of a new benchmark (in a new or empty
folder) or checks a resumed one against it; :func:`resume_config` reads the specs
back from a folder (``run --out DIR --resume`` alone).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.benchmark._e2e import EndToEndOptions
from shieldbench.config import BenchmarkConfig
from shieldbench.errors import ConfigError, RunError
from shieldbench.locking import LOCK_NAME
from shieldbench.types import RunConfig

__all__ = [
    "COLUMNAR_FROM",
    "MANIFEST",
    "prepare_folder",
    "resume_config",
    "run_format",
    "settle_end_to_end",
]

MANIFEST = "benchmark.json"
COLUMNAR_FROM = 100_000
"""Runs of at least this many samples are stored as Parquet run files, smaller ones as JSON."""


def run_format(n_samples: int) -> str:
    """The suffix of a run file for ``n_samples`` samples: ``json`` or ``parquet``.

    >>> run_format(10), run_format(COLUMNAR_FROM)
    ('json', 'parquet')
    """
    return "parquet" if n_samples >= COLUMNAR_FROM else "json"


def resume_config(folder: Path) -> BenchmarkConfig:
    """The benchmark in ``folder`` as its manifest states it: specs, margin, run settings.

    ``run_benchmark(resume_config(folder), out=folder, resume=True)`` continues it.
    """
    path = folder / MANIFEST
    if not path.exists():
        raise RunError(f"{path}: nothing to resume here (no {MANIFEST})")
    try:
        old = json.loads(read_text_input(path, error=RunError, what=MANIFEST))
        specs = BenchmarkConfig(
            defenses=tuple(old["defenses"]),
            datasets=tuple(old["datasets"]),
            margin=float(old.get("margin", 0.1)),
        )
    except (ValueError, KeyError, TypeError, AttributeError, ConfigError) as exc:
        raise RunError(f"{path}: not a readable benchmark manifest ({exc})") from None
    try:
        return replace(specs, run=RunConfig.from_dict(old.get("run") or {}))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunError(f"{path}: bad run settings ({exc})") from None


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


def _read_manifest(path: Path) -> dict[str, object]:
    if not path.exists():
        raise RunError(f"{path}: nothing to resume here (no {MANIFEST})")
    try:
        old = json.loads(read_text_input(path, error=RunError, what=MANIFEST))
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(old, dict) or not isinstance(old.get("id"), str):
        raise RunError(f"{path}: not a shieldbench benchmark manifest")
    return old


def _resumed(
    cfg: BenchmarkConfig, target: Path, explicit: Sequence[str]
) -> tuple[Path, str, BenchmarkConfig]:
    """The folder, id and config of the resumed benchmark in ``target``."""
    manifest_path = target / MANIFEST
    old = _read_manifest(manifest_path)
    for key in ("defenses", "datasets"):
        if old.get(key) != list(getattr(cfg, key)):
            raise RunError(
                f"{manifest_path}: the interrupted benchmark ran {key} {old.get(key)};"
                f" this command asks for {list(getattr(cfg, key))}. Resume with the same"
                " specs, or start a new benchmark without --resume."
            )
    try:
        stored = RunConfig.from_dict(old.get("run") or {})  # type: ignore[arg-type]
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


def prepare_folder(
    cfg: BenchmarkConfig, out: Path | None, resume: bool, *, explicit: Sequence[str] = ()
) -> tuple[Path, str, BenchmarkConfig]:
    """The output folder, the benchmark id (new, or the resumed one's) and the config.

    On resume the run settings stored in ``benchmark.json`` are used, so every pair
    of the benchmark runs (and is reported) with the same ones; a setting named in
    ``explicit`` (given on the command line or in a config file) that differs from
    the stored one is an error rather than a silent mix. A new benchmark needs a new
    or empty folder (default ``reports/<benchmark id>``).
    """
    target = out or cfg.out
    if resume:
        if target is None:
            raise ConfigError(
                "--resume needs the folder of the interrupted benchmark: pass --out DIR"
                " (the path printed when it started)"
            )
        return _resumed(cfg, target, explicit)
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


def settle_end_to_end(
    folder: Path, options: EndToEndOptions, canary: str | None, resume: bool
) -> str | None:
    """Record the end-to-end settings in ``benchmark.json``; on resume, check and reuse them.

    Returns the canary every pair of the benchmark uses (the stored one on resume).
    """
    path = folder / MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    stored = manifest.get("end_to_end")
    if resume and stored is not None:
        asked = options.to_dict(stored.get("canary"))
        if asked != stored:
            raise RunError(
                f"{path}: the interrupted benchmark ran end to end with {stored!r}; this command"
                f" asks for {asked!r}. Resume with the same --target/--judge options."
            )
        return stored.get("canary")  # type: ignore[no-any-return]
    if resume and stored is None:
        raise RunError(f"{path}: the interrupted benchmark had no --target; resume without it")
    manifest["end_to_end"] = options.to_dict(canary)
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return canary
