"""Saving and loading runs as JSON files (schema-versioned).

A run file is self-contained: defense, dataset (with content hash), config,
environment, end-to-end figures, every sample and every outcome, each written by
its record's one codec (:mod:`shieldbench.runfiles`), which the Parquet run file
and the engine's checkpoint share. ``shieldbench report`` and
``shieldbench compare`` read these files. A path ending in ``.parquet`` holds the
same run in columnar form (one row per sample and outcome, written and read in row
groups; see :mod:`shieldbench.runfiles._parquet`): the CLI writes it for large runs.

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
from pathlib import Path
from typing import Any

from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.errors import RunError
from shieldbench.runfiles._header import (
    RUN_SCHEMA_VERSION,
    check_kind,
    decode_records,
    run_from_header,
    run_header,
)
from shieldbench.types import Outcome, Run, Sample

__all__ = ["RUN_SCHEMA_VERSION", "load_run", "run_from_dict", "run_to_dict", "save_run"]


def run_to_dict(run: Run) -> dict[str, Any]:
    """The JSON-ready form of a run: its header (:func:`~shieldbench.runfiles.run_header`,
    ``schema_version`` first), then every sample and every outcome (``to_dict()``)."""
    return run_header(run) | {
        "samples": [s.to_dict() for s in run.samples],
        "outcomes": [o.to_dict() for o in run.outcomes],
    }


def run_from_dict(data: Mapping[str, Any], *, source: str = "<dict>") -> Run:
    """Rebuild a run from :func:`run_to_dict` output.

    :class:`RunError` on bad input, naming ``source`` and the field (``samples[3]:
    field 'label' is missing``).
    """
    check_kind(data, where=source)
    for key in ("samples", "outcomes"):
        if key not in data:
            raise RunError(f"{source}: field {key!r} is missing")
    samples = decode_records(Sample, data["samples"], where=f"{source}: samples")
    outcomes = decode_records(Outcome, data["outcomes"], where=f"{source}: outcomes")
    return run_from_header(data, samples=samples, outcomes=outcomes, where=source)


def _json_default(value: Any) -> Any:
    """Nested read-only mappings (in metadata, details) are written as objects."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def save_run(run: Run, path: str | Path) -> Path:
    """Write ``run`` to ``path`` atomically and durably; returns the path.

    Through :func:`shieldbench._textio.write_text_atomic`: temp file, fsync, rename,
    mode 0644, text UTF-8 cannot encode written as ``\\u`` escapes, secrets masked.
    Parquet when ``path`` ends in ``.parquet`` (see :mod:`shieldbench.runfiles._parquet`).
    """
    if Path(path).suffix == ".parquet":
        from shieldbench.runfiles._parquet import save_run_parquet

        return save_run_parquet(run, path)
    text = json.dumps(run_to_dict(run), ensure_ascii=False, indent=1, default=_json_default) + "\n"
    return write_text_atomic(path, text)


def load_run(path: str | Path) -> Run:
    """Read a run file written by :func:`save_run` (JSON, or Parquet by its suffix)."""
    source = Path(path)
    if source.suffix == ".parquet":
        from shieldbench.runfiles._parquet import load_run_parquet

        return load_run_parquet(source)
    text = read_text_input(source, error=RunError, what="run file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunError(f"{source}:{exc.lineno}: not JSON ({exc.msg})") from exc
    if not isinstance(data, dict):
        raise RunError(f"{source}: a run file holds a JSON object")
    return run_from_dict(data, source=str(source))
