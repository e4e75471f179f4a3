"""Give freed memory back to the operating system between the stages of a large run.

A million-sample run frees most of what one stage built (the screened batches, the
summary's intermediate arrays) before the next stage grows again, but freed memory
stays in the allocators' pools and counts in the process's resident size: CPython's
objects go to glibc's malloc, Arrow's buffers to its mimalloc pool, and neither returns
pages on its own promptly. :func:`release_memory` asks both to, so the next stage's
peak starts from what is really in use. It never frees anything still referenced and
costs a few milliseconds; where a call is unavailable (not glibc, an old pyarrow) it is
skipped.

A small process skips it: under :data:`WORTH_RELEASING` of peak resident memory
there is little to give back, and the full garbage collection (tens of milliseconds
over the objects of every imported module, four times a run) would be most of what a
small benchmark, such as a pattern-only smoke run, spends between its stages.
"""

from __future__ import annotations

import ctypes
import gc
import resource
import sys

__all__ = ["WORTH_RELEASING", "peak_resident_bytes", "release_memory"]

WORTH_RELEASING = 128 * 1024 * 1024  # bytes of peak resident memory


def peak_resident_bytes() -> int:
    """This process's peak resident memory, in bytes.

    On Linux the kernel's ``VmHWM`` of this process's own address space: ``ru_maxrss``
    is inherited across ``fork`` and kept across ``exec``, so a small command started by
    a large process (a test worker, a notebook) would read its parent's peak.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak * (1 if sys.platform == "darwin" else 1024)  # macOS: bytes, else kB


def release_memory() -> None:
    """Collect garbage, then return unused pages of the Arrow pool and of malloc (in a
    process that has grown past :data:`WORTH_RELEASING`; a smaller one keeps them)."""
    if peak_resident_bytes() < WORTH_RELEASING:
        return
    gc.collect()
    pyarrow = sys.modules.get("pyarrow")  # only if a stage used it: never imported here
    if pyarrow is not None:
        release = getattr(pyarrow.default_memory_pool(), "release_unused", None)
        if callable(release):
            release()
    if sys.platform.startswith("linux"):
        # the process's own symbols: glibc's malloc_trim where libc is glibc (not musl)
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
        if trim is not None:
            trim(0)
