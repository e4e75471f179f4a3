"""Saving and loading run files (JSON, or Parquet by the path's suffix): the public names.

The code lives in :mod:`shieldbench.runfiles` (the one owner of run-file I/O: the
records' codec, the JSON and the Parquet run file, the columnar record views);
this module keeps the import path that scripts, the CLI and the docs use.

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

from shieldbench.runfiles import (
    RUN_SCHEMA_VERSION,
    load_run,
    run_from_dict,
    run_to_dict,
    save_run,
)

__all__ = ["RUN_SCHEMA_VERSION", "load_run", "run_from_dict", "run_to_dict", "save_run"]
