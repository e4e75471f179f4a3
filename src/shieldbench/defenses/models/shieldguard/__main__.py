"""``python -m shieldbench.defenses.models.shieldguard``: moved; says where to.

Retraining moved out of the run-time package into ``shieldbench.train`` (issue 32):
``shieldbench train shieldguard OUT`` (and ``--prepare FILE``) replace this module's
``train OUT`` and ``prepare FILE``. It imports nothing from ``shieldbench.train``
(the run-time package never does): it only prints the new command and fails.
"""

from __future__ import annotations

import sys

__all__ = ["MOVED", "main"]

MOVED = (
    "error: `python -m shieldbench.defenses.models.shieldguard train|prepare` moved to"
    " `shieldbench train shieldguard OUT` (and `shieldbench train shieldguard --prepare FILE`);"
    " run `shieldbench train shieldguard --help` from a source checkout"
)


def main(argv: list[str] | None = None) -> int:
    """Print :data:`MOVED` on stderr and return 2, whatever the arguments."""
    del argv
    print(MOVED, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
