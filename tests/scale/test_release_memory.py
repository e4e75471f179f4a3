"""release_memory: freed heap pages go back to the OS; live data is untouched."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import pyarrow as pa
    from shieldbench._memory import release_memory

    def rss():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024

    live = pa.array(list(range(100_000)))
    blob = [bytes([i % 256]) * 1000 for i in range(300_000)]  # ~300 MB of heap objects
    survivors = blob[::1000]  # a few live objects keep glibc from trimming on its own
    del blob
    freed = rss()
    release_memory()
    print(freed, rss(), len(survivors), live.sum().as_py())
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, trims glibc")
@pytest.mark.slow
def test_freed_heap_is_returned_and_live_data_kept() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    freed, released, survivors, total = (int(x) for x in done.stdout.split())
    assert survivors == 300
    assert total == sum(range(100_000))
    assert freed > 250  # the freed objects still count in RSS before the call
    assert released < freed / 2, (freed, released)
