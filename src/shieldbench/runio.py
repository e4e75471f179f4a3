"""Saving and loading runs as JSON files (schema-versioned).

A run file is self-contained: defense, dataset (with content hash), config,
environment, every sample and every outcome. ``shieldbench report`` and
``shieldbench compare`` read these files. A path ending in ``.parquet`` holds the
same run in columnar form (one row per sample and outcome, written and read in row
groups; see :mod:`shieldbench._runparquet`): the CLI writes it for large runs.

Example:
    >>> import tempfile, pathlib
    >>> from datetime import datetime, timezone
    >>> from shieldbench.types import *
    >>> now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> run = Run("r1", DefenseInfo("pattern", "pattern"), DatasetInfo("inline", "sha256:0", 1),
    ...           RunConfig(), (Sample("1", "hi", "benign"),),
    ...           (Outcome("1", Verdict(False, 0.0), "ok", latency_ms=0.1),), now, now)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.json"
    >>> save_run(run, path) == path and load_run(path) == run
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from shieldbench._runparquet import run_header
from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.errors import RunError
from shieldbench.types import DatasetInfo, DefenseInfo, Outcome, Run, RunConfig, Sample

__all__ = ["RUN_SCHEMA_VERSION", "load_run", "run_from_dict", "run_to_dict", "save_run"]

RUN_SCHEMA_VERSION = 1


def run_to_dict(run: Run) -> dict[str, Any]:
    """The JSON-ready form of a run (``schema_version`` first)."""
    return (
        run_header(run)
        | {
            "samples": [s.to_dict() for s in run.samples],
            "outcomes": [o.to_dict() for o in run.outcomes],
        }
        | ({"end_to_end": _plain(run.end_to_end)} if run.end_to_end else {})
    )


def _plain(value: Any) -> Any:
    """Read-only mappings and tuples as JSON-ready dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def run_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> Run:
    """Rebuild a run from :func:`run_to_dict` output; :class:`RunError` on bad input."""
    kind = data.get("kind", "shieldbench.run")
    if kind != "shieldbench.run":
        hint = " (render it with `shieldbench report`)" if kind == "shieldbench.attack" else ""
        raise RunError(f"{source}: a {kind!r} file, not a run file (runs/*.json){hint}")
    version = data.get("schema_version")
    if version != RUN_SCHEMA_VERSION:
        raise RunError(
            f"{source}: run schema_version {version!r} is not supported"
            f" (this shieldbench reads version {RUN_SCHEMA_VERSION})"
        )
    try:
        return Run(
            id=str(data["id"]),
            defense=DefenseInfo.from_dict(data["defense"]),
            dataset=DatasetInfo.from_dict(data["dataset"]),
            config=RunConfig.from_dict(data["config"]),
            samples=tuple(Sample.from_dict(s) for s in data["samples"]),
            outcomes=tuple(Outcome.from_dict(o) for o in data["outcomes"]),
            started=datetime.fromisoformat(data["started"]),
            finished=datetime.fromisoformat(data["finished"]),
            environment=data.get("environment") or {},
            schema_version=int(version),
            end_to_end=data.get("end_to_end") or {},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise RunError(
            f"{source}: not a valid shieldbench run file ({type(exc).__name__}: {exc})"
        ) from exc


def save_run(run: Run, path: str | Path) -> Path:
    """Write ``run`` to ``path`` atomically and durably; returns the path.

    Through :func:`shieldbench._textio.write_text_atomic`: temp file, fsync, rename,
    mode 0644, text UTF-8 cannot encode written as ``\\u`` escapes, secrets masked.
    Parquet when ``path`` ends in ``.parquet`` (see :mod:`shieldbench._runparquet`).
    """
    if Path(path).suffix == ".parquet":
        from shieldbench._runparquet import save_run_parquet

        return save_run_parquet(run, path)
    text = json.dumps(run_to_dict(run), ensure_ascii=False, indent=1) + "\n"
    return write_text_atomic(path, text)


def load_run(path: str | Path) -> Run:
    """Read a run file written by :func:`save_run` (JSON, or Parquet by its suffix)."""
    source = Path(path)
    if source.suffix == ".parquet":
        from shieldbench._runparquet import load_run_parquet

        return load_run_parquet(source, schema_version=RUN_SCHEMA_VERSION)
    text = read_text_input(source, error=RunError, what="run file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunError(f"{source}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise RunError(f"{source}: a run file holds a JSON object")
    return run_from_dict(data, source=str(source))
