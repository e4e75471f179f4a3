"""``shieldbench merge`` of 8 shard runs holding 1,000,000 outcomes in total.

The shard runs (Parquet run files of 125,000 rows, as ``run --shard I/8`` writes
for large datasets) are generated first, not timed. Measured, each in its own
process: ``shieldbench merge`` of the 8 files into one Parquet run file (checks,
content hash recomputed over every sample, write), its wall time and peak RSS.
Baseline in the same run: copying the equivalent unsplit 1M-row run file through
``load_run`` + ``save_run`` (the least any rewrite of the run costs).

Run: ``nice -n 10 .venv/bin/python benchmarks/merge_speed.py [TOTAL] [SHARDS]``
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from large_runs import measure
from shieldbench.datasets import content_hash
from shieldbench.engine._shards import mark_shard, shard_bounds
from shieldbench.runio import save_run
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Label,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)


def _samples(start: int, stop: int) -> Iterator[Sample]:
    for i in range(start, stop):
        label: Label = "attack" if i % 5 < 2 else "benign"
        yield Sample(f"g{i:07d}", f"generated text number {i} for the merge benchmark", label,
                     category=f"cat{i % 20}")  # fmt: skip


def _outcome(s: Sample, i: int) -> Outcome:
    return Outcome(s.id, Verdict(i % 3 == 0, (i % 100) / 100, None, ()), "ok", None, 0.05, 1)


def main() -> int:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    work = Path(tempfile.mkdtemp(prefix="sb-merge-"))
    digest = content_hash(_samples(0, total))
    now = datetime.now(UTC)
    info = DatasetInfo("jsonl:generated.jsonl", digest, total)
    files = []
    for k in range(1, count + 1):
        start, stop = shard_bounds(total, k, count)
        samples = tuple(_samples(start, stop))
        outcomes = tuple(_outcome(s, start + j) for j, s in enumerate(samples))
        run = Run("bench", DefenseInfo("pattern", "pattern", "1"), info, RunConfig(), samples,
                  outcomes, now, now)  # fmt: skip
        files.append(save_run(mark_shard(run, k, count, total), work / f"shard-{k}.parquet"))
        del samples, outcomes, run
    whole = Run("bench", DefenseInfo("pattern", "pattern", "1"), info, RunConfig(),
                tuple(_samples(0, total)), tuple(_outcome(s, i) for i, s in
                enumerate(_samples(0, total))), now, now)  # fmt: skip
    unsplit = save_run(whole, work / "unsplit.parquet")
    del whole
    cli = [sys.executable, "-c", "from shieldbench.cli import main; main()"]
    merge_s, merge_mb = measure([*cli, "merge", *map(str, files), "--out",
                                 str(work / "merged.parquet")])  # fmt: skip
    copy = (
        "import sys; from shieldbench.runio import load_run, save_run;"
        " save_run(load_run(sys.argv[1]), sys.argv[2])"
    )
    copy_s, copy_mb = measure(
        [sys.executable, "-c", copy, str(unsplit), str(work / "copy.parquet")]
    )
    print(
        f"merge of {count} shards, {total:,} outcomes: {merge_s:.1f} s, peak RSS {merge_mb:.0f} MiB"
    )
    print(f"baseline: copy of the unsplit run (load + save): {copy_s:.1f} s, {copy_mb:.0f} MiB")
    print(f"merge vs copy: time {merge_s / copy_s:.2f}x, memory {merge_mb / copy_mb:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
