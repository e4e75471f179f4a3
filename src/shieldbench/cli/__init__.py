"""The ``shieldbench`` command line: thin commands over the library.

Nothing imports this package; it imports everything it needs.
"""

from __future__ import annotations

import os
import sys

import typer
from rich.markup import escape

# Command modules register their commands on import (one line each).
# ruff: noqa: F401  (imported for their side effect: registering commands)
import shieldbench.cli._attack  # attack, mutators, datasets mutate
import shieldbench.cli._calibrate  # calibrate (threshold for a target FPR, policy)
import shieldbench.cli._datasets  # datasets list/show/validate/overlap/sample
import shieldbench.cli._defenses  # defenses list, check
import shieldbench.cli._e2e  # judges list/evaluate, targets list
import shieldbench.cli._gate  # gate (CI: candidate vs baseline)
import shieldbench.cli._generate  # generate (attacks written for an application)
import shieldbench.cli._history  # history list/show/export/import
import shieldbench.cli._monitor  # monitor (scheduled re-runs, alerts)
import shieldbench.cli._report  # report (re-render stored runs)
import shieldbench.cli._run  # run (benchmark defenses on datasets)
import shieldbench.cli._scale  # merge (shard runs into one run)
import shieldbench.cli._serve  # serve (guard service), audit verify/export/prune
import shieldbench.cli._stats  # plan, compare
import shieldbench.cli._train  # train
import shieldbench.cli._view  # view (read-only web viewer over the history)
from shieldbench._redact import redact
from shieldbench.cli._app import EXIT_BAD_INPUT, EXIT_INTERRUPTED, app, err_console
from shieldbench.cli._guards import refuse_repeated_options
from shieldbench.errors import ShieldbenchError

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``shieldbench`` script: library errors become one clear line.

    Exit codes (also in ``shieldbench --help``): 0 success; 1 a finding (a defense
    failed in ``check``, a non-inferiority test failed in ``compare --margin``, a run's
    error rate passed ``--max-error-rate``); 2 bad input (option, spec, config, data,
    output path), one line naming what and where, no traceback; 130 interrupted
    (Ctrl-C), after saying how to resume.
    """
    # Hugging Face's per-file "Loading weights" bars would interleave with our own
    # progress display; a user who wants them sets the variable to 0.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        # typer builds the click command tree from the functions' signatures (a fifth
        # of ``--help``'s start-up): build it once, check it, run it. ``app()`` would
        # build it again; it also installs typer's pretty-traceback hook, which with
        # ``pretty_exceptions_enable=False`` hands every exception to Python's own hook.
        command = typer.main.get_command(app)
        refuse_repeated_options(command, sys.argv[1:])
        command()
    except ShieldbenchError as exc:
        _fail(str(exc), EXIT_BAD_INPUT)
    except OSError as exc:  # a path the up-front checks could not foresee (disk full, ...)
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{exc.strerror or exc}", EXIT_BAD_INPUT)
    except RecursionError:  # a last line of defense: the inputs have their own depth limits
        _fail(
            "an input is nested too deeply to process (a spec, a config or a data record);"
            " flatten it",
            EXIT_BAD_INPUT,
        )
    except KeyboardInterrupt:
        _fail("interrupted (Ctrl-C)", EXIT_INTERRUPTED)


def _fail(message: str, code: int) -> None:
    text = f"[bold red]error:[/] {escape(redact(message))}"
    err_console.print(text, highlight=False, markup=True, soft_wrap=True)
    sys.exit(code)
