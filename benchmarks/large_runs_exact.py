"""Exactness of a large run's figures: streamed from disk against held in memory.

A large run's summary is computed from its Parquet run file a block of rows at a time
(``shieldbench.metrics``: counts per block, score counts per distinct score, radix
selection for the latency percentiles). This script checks, on one real run of
``N`` generated samples (``shieldbench run -d pattern``, as ``large_runs.py``), that
every figure of that summary equals the one computed with the whole run held in
memory as objects (the per-sample arrays of the classic path):

- every count and rate (and its interval) and every breakdown must be **equal**,
  bit for bit;
- the score figures (``scores``: ROC-AUC with its DeLong interval, PR-AUC with its
  bootstrap interval, operating points) may differ by the order of floating-point
  additions: at most 1e-9 relative, and each such leaf is listed.

It prints how many leaves were compared, how many are equal, and every one that is
not, and exits non-zero on a failure. The in-memory side needs the run's objects in
memory (about 1 GB at 1,000,000 samples): the point is the comparison, not the memory.

Run: ``python benchmarks/large_runs_exact.py [N] [--run FILE.parquet] [--save]``
(default N 1000000; ``--run`` checks an existing run file instead of making one).
``--save`` writes the output to ``benchmarks/results/large_runs_exact.txt``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "src")]

from large_runs import generate  # noqa: E402  (the same generated data)
from shieldbench.metrics import summarize  # noqa: E402
from shieldbench.runfiles import ParquetRows  # noqa: E402
from shieldbench.runio import load_run, save_run  # noqa: E402

RESULTS = HERE / "results" / "large_runs_exact.txt"
#: The largest relative difference a score figure may show (float addition order).
SCORE_TOLERANCE = 1e-9


def make_run(work: Path, n: int) -> Path:
    """Generate ``n`` samples and run the pattern defense on them; the run file."""
    data = work / f"data-{n}.jsonl"
    generate(data, n)
    out = work / "out"
    command = [sys.executable, "-m", "shieldbench", "run", "-d", "pattern",
               "-D", f"jsonl:{data}", "--warmup", "0", "--out", str(out), "--no-store"]  # fmt: skip
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    data.unlink()
    (found,) = sorted((out / "runs").glob("*.*"))
    if found.suffix != ".parquet":  # a small run is written as JSON: columnar it must be
        found = save_run(load_run(found), work / "run.parquet")
    return found


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON-like document, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def relative(a: Any, b: Any) -> float:
    """How far apart two leaves are (0 equal, inf when not comparable numbers)."""
    if a == b or (
        isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    ):
        return 0.0
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return abs(a - b) / max(abs(a), abs(b), 1e-300)
    return math.inf


def compare(streamed: dict[str, Any], in_memory: dict[str, Any]) -> tuple[list[str], bool]:
    """Report lines and whether the streamed summary passes (module doc)."""
    got, want = dict(leaves(streamed)), dict(leaves(in_memory))
    lines, ok = [], True
    if got.keys() != want.keys():
        ok = False
        lines.append(f"  different fields: {sorted(got.keys() ^ want.keys())[:20]}")
    equal = differing = 0
    for path in sorted(got.keys() & want.keys()):
        gap = relative(got[path], want[path])
        if gap == 0.0:
            equal += 1
            continue
        differing += 1
        allowed = path.startswith("scores.") and gap <= SCORE_TOLERANCE
        ok &= allowed
        verdict = "float addition order" if allowed else "FAIL"
        lines.append(f"  {path}: {got[path]!r} vs {want[path]!r} (relative {gap:.1e}, {verdict})")
    head = f"  {equal + differing} figures compared: {equal} equal, {differing} not"
    return [head, *lines], ok


def main(n: int, run_file: Path | None, save: bool) -> int:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="sb-exact-"))
    path = run_file or make_run(work, n)
    start = time.perf_counter()
    run = load_run(path)
    if not isinstance(run.outcomes, ParquetRows):
        raise SystemExit(f"{path}: not read as a columnar run (a .parquet run file is)")
    streamed = summarize(run).to_dict()
    streamed_s = time.perf_counter() - start
    start = time.perf_counter()
    held = dataclasses.replace(run, samples=tuple(run.samples), outcomes=tuple(run.outcomes))
    in_memory = summarize(held).to_dict()
    held_s = time.perf_counter() - start
    lines, ok = compare(streamed, in_memory)
    lines = [
        f"large_runs_exact.py: {when}, load average {load:.2f},"
        f" {len(held.samples):,} samples, run file {path.name}",
        f"  summary streamed from the Parquet run file {streamed_s:.1f} s;"
        f" in memory (objects, per-sample arrays) {held_s:.1f} s",
        *lines,
        f"  {'PASS' if ok else 'FAIL'}: every count, rate and interval equal; score figures"
        f" within {SCORE_TOLERANCE:g} relative",
    ]
    text = "\n".join(lines)
    print(text)
    if save:
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text(text + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=1_000_000, help="samples (1000000)")
    parser.add_argument("--run", type=Path, help="check this Parquet run file instead")
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/...")
    args = parser.parse_args()
    if args.n < 1:
        parser.error(f"N must be at least 1, got {args.n}")
    sys.exit(main(args.n, args.run, args.save))
