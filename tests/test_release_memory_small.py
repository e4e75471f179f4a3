"""release_memory skips a small process (no full collection for nothing to give back)
and still runs in a process that has grown past WORTH_RELEASING."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from shieldbench._memory import WORTH_RELEASING

CHILD = textwrap.dedent(
    """
    import gc, sys
    from shieldbench._memory import WORTH_RELEASING, release_memory

    def full_collections():
        return gc.get_stats()[2]["collections"]

    gc.disable()  # only release_memory may collect
    before = full_collections()
    release_memory()
    small = full_collections() - before
    blob = [bytes(1000) for _ in range(2 * WORTH_RELEASING // 1000)]  # grow past it
    del blob
    before = full_collections()
    release_memory()
    print(small, full_collections() - before)
    """
)


def test_a_small_process_skips_the_collection_and_a_large_one_runs_it() -> None:
    """The child starts from a parent that has grown past the threshold too: its
    kept-across-exec ``ru_maxrss`` must not count as the child's own peak."""
    parent_blob = bytearray(WORTH_RELEASING + 16 * 1024 * 1024)
    parent_blob[::4096] = b"x" * len(parent_blob[::4096])  # touch every page
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=120
    )
    del parent_blob
    small, large = (int(x) for x in done.stdout.split())
    assert small == 0
    assert large == 1
