"""Memory and time of the score figures on all-distinct scores: the bounded sketch
against the exact per-distinct-score counts, 100,000 to 10,000,000 samples.

A continuous classifier score gives every sample its own score, so the exact counts
grow with the samples (24 bytes a distinct score, and today's merge re-sorts the
running total per block). The sketch (``counts_of_blocks``, ``DISTINCT_LIMIT``
bins) keeps at most the limit and states its error. For each size and method, one
fresh process builds the counts block by block (65,536 generated rows a block:
never all samples at once), then computes every score figure of the summary
(ROC-AUC with DeLong, PR-AUC with its bootstrap, both operating points, the sketch
bounds). Its peak resident memory (``ru_maxrss``) and times are measured; a third
process that only generates the blocks is the memory floor, so the figures' own
memory is ``peak - floor`` (the floor imports the same modules).

Methods: ``exact`` is today's algorithm before the sketch (``ScoreCounts.merge`` of
each block into the running total, no limit); ``sketch`` is ``counts_of_blocks``
with the default limit (exact up to 1,048,576 distinct scores, so the 100,000-sample
run is exact both ways and the baseline of the ratios). Printed: per size, time and
memory of each method, the ratios sketch / exact and against the first size, and
the sketch's achieved bounds with the actual AUC and AP gaps where the exact run ran.

Run: ``nice -n 10 .venv/bin/python benchmarks/score_sketch.py [SIZES...] [--exact-up-to N]
[--save]`` (default sizes 100000 1000000 10000000; the exact method runs up to
``--exact-up-to``, default 10,000,000). The 10M runs need an idle machine and a few
GB of memory for the exact method; ``--save`` writes
``benchmarks/results/score_sketch.txt``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).parent / "results" / "score_sketch.txt"
BLOCK = 65_536


def blocks(n: int, seed: int = 0) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``n`` samples, a block at a time: 30% attacks, normal scores (all distinct)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n, BLOCK):
        size = min(BLOCK, n - start)
        y = rng.random(size) < 0.3
        yield y, rng.normal(y * 1.2, 1.0)


def _exact_counts(n: int) -> Any:
    from shieldbench.metrics import ScoreCounts

    total = ScoreCounts.of([], [])
    for y, s in blocks(n):
        total = total.merge(ScoreCounts.of(y, s, limit=n + 1), limit=n + 1)
    return total


def _figures(counts: Any, n: int, limit: int) -> dict[str, Any]:
    from shieldbench.metrics._count_points import (
        fpr_at_tpr_counts,
        sketch_bounds,
        tpr_at_fpr_counts,
    )
    from shieldbench.metrics._score_counts import average_precision_with_range, roc_auc_counts
    from shieldbench.metrics._summary import _pr_resamples

    auc = roc_auc_counts(counts)
    ap, ap_range, ap_interval = average_precision_with_range(counts, n_resamples=_pr_resamples(n))
    tpr_at_fpr_counts(counts, max_fpr=0.01)
    fpr_at_tpr_counts(counts, min_tpr=0.9)
    bounds = sketch_bounds(
        counts,
        distinct_limit=limit,
        confidence=0.95,
        target_fpr=0.01,
        target_tpr=0.9,
        average_precision_range=ap_range,
        average_precision=ap.value,
        average_precision_interval=ap_interval,
    )
    return {
        "auc": auc.value,
        "ap": ap.value,
        "bins": int(counts.scores.size),
        "bounds": None if bounds is None else bounds.to_dict(),
    }


def child(method: str, n: int) -> dict[str, Any]:
    """Run one method on ``n`` samples in this process; timings and figures."""
    from shieldbench.metrics import (  # noqa: F401
        DISTINCT_LIMIT,
        _count_points,
        _score_counts,
        _summary,
        counts_of_blocks,
    )

    t0 = time.perf_counter()
    if method == "floor":
        for _ in blocks(n):
            pass
        return {"count_s": time.perf_counter() - t0, "figures_s": 0.0}
    counts = _exact_counts(n) if method == "exact" else counts_of_blocks(blocks(n))
    t1 = time.perf_counter()
    out = _figures(counts, n, DISTINCT_LIMIT if method == "sketch" else n + 1)
    out.update(count_s=t1 - t0, figures_s=time.perf_counter() - t1)
    return out


def measure(method: str, n: int) -> dict[str, Any]:
    """``child`` in a fresh process, with its peak resident memory (MiB)."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", method, str(n)],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"{method} {n} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _report(n: int, got: dict[str, dict[str, Any]], say: Any) -> None:
    floor = got["floor"]["peak_mib"]
    for method in ("exact", "sketch"):
        r = got.get(method)
        if r is None:
            continue
        say(f"  {method:<6} {r['count_s']:7.2f} s counting + {r['figures_s']:7.2f} s figures,"
            f" peak {r['peak_mib']:6.0f} MiB ({r['peak_mib'] - floor:6.0f} over the floor),"
            f" {r['bins']:,} bins")  # fmt: skip
    s, e = got["sketch"], got.get("exact")
    if e is not None:
        t_ratio = (s["count_s"] + s["figures_s"]) / (e["count_s"] + e["figures_s"])
        m_ratio = (s["peak_mib"] - floor) / max(e["peak_mib"] - floor, 1.0)
        say(f"  sketch / exact: time {t_ratio:.2f}x, memory over the floor {m_ratio:.2f}x")
    b = s["bounds"]
    if b is None:
        say("  sketch is exact at this size (no bounds: every figure exact)")
        return
    say(f"  bounds: ROC-AUC {b['roc_auc_error_bound']:.2e}, DeLong SE"
        f" {b['roc_auc_se_error_bound']:.2e}, AP {b['average_precision_error_bound']:.2e},"
        f" PR-AUC interval ends {b['pr_auc_interval_error_bound']:.2e}, block rate at FPR 1%"
        f" shortfall {b['tpr_at_fpr_shortfall_bound']:.2e}")  # fmt: skip
    if e is not None:
        say(f"  actual gaps: ROC-AUC {abs(s['auc'] - e['auc']):.2e},"
            f" AP {abs(s['ap'] - e['ap']):.2e}")  # fmt: skip


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        method, n = argv[1], int(argv[2])
        result = child(method, n)
        result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return 0
    exact_up_to = 10_000_000
    if "--exact-up-to" in argv:
        at = argv.index("--exact-up-to")
        exact_up_to = int(argv[at + 1])
        del argv[at : at + 2]
    sizes = [int(a) for a in argv if not a.startswith("--")] or [100_000, 1_000_000, 10_000_000]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    lines = [f"# score_sketch.py {' '.join(map(str, sizes))} --exact-up-to {exact_up_to}"
             f"  ({when}, load average {load:.2f}, {os.cpu_count()} CPUs)"]  # fmt: skip

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    print(lines[0], flush=True)
    runs = []
    for n in sizes:
        methods = ["floor", "sketch"] + (["exact"] if n <= exact_up_to else [])
        got = {m: measure(m, n) for m in methods}
        runs.append((n, got))
        say(f"{n:>11,} samples (floor: generating the blocks alone, {got['floor']['peak_mib']:.0f}"
            " MiB peak)")  # fmt: skip
        _report(n, got, say)
    n0, first = runs[0]
    for n, got in runs[1:]:
        for method in ("sketch", "exact"):
            if method in got and method in first:
                a, b = got[method], first[method]
                per = ((a["count_s"] + a["figures_s"]) / n) / ((b["count_s"] + b["figures_s"]) / n0)
                mem = (a["peak_mib"] - got["floor"]["peak_mib"]) / max(
                    b["peak_mib"] - first["floor"]["peak_mib"], 1.0
                )
                say(f"{n:,} vs {n0:,}, {method}: time per sample {per:.2f}x,"
                    f" memory over the floor {mem:.2f}x")  # fmt: skip
    if "--save" in sys.argv:
        RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
