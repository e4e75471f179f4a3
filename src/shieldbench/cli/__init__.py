"""The ``shieldbench`` command line: thin commands over the library.

Nothing imports this package; it imports everything it needs.
"""

from __future__ import annotations

import os
import sys

# Command modules register their commands on import (one line each).
# ruff: noqa: F401  (imported for their side effect: registering commands)
import shieldbench.cli._attack  # attack, mutators, datasets mutate
import shieldbench.cli._calibrate  # calibrate (threshold for a target FPR, policy)
import shieldbench.cli._datasets  # datasets list/show/validate/overlap/sample
import shieldbench.cli._defenses  # defenses list, check
import shieldbench.cli._report  # report (re-render stored runs)
import shieldbench.cli._run  # run (benchmark defenses on datasets)
import shieldbench.cli._serve  # serve (guard service), audit verify/export/prune
import shieldbench.cli._stats  # plan, compare
import shieldbench.cli._train  # train
from shieldbench.cli._app import app, err_console
from shieldbench.errors import ShieldbenchError

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``shieldbench`` script: library errors become one clear line."""
    # Hugging Face's per-file "Loading weights" bars would interleave with our own
    # progress display; a user who wants them sets the variable to 0.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        app()
    except ShieldbenchError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
        sys.exit(2)
