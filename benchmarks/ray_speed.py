"""Ray executor vs the local engine on the same work, measured in one run.

20,000 texts through a defense that takes 5 ms per text (``_sleepy.Sleepy``: a
sleep, so it releases the GIL like a model call). Baseline: the local engine with
``concurrency=W`` threads. Measured: ``RayExecutor(workers=W)`` on a local Ray
(each worker ``concurrency=1``, batches of 64), so both have W calls in flight;
the ideal for both is 20,000 x 5 ms / W. Ray's start-up (workers, defense built
on each) is counted; ``ray.init`` itself is not (it happens once per process).
Target: Ray <= 1.3x the local wall time.

Run: ``.venv/bin/python benchmarks/ray_speed.py [N] [W]`` (defaults 20000, 2).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p
)
sys.path.insert(0, str(HERE))

from shieldbench.datasets import Dataset  # noqa: E402
from shieldbench.defenses import build_defense  # noqa: E402
from shieldbench.engine import RayExecutor, run_defense, start_local_ray  # noqa: E402
from shieldbench.types import RunConfig, Sample  # noqa: E402

SPEC = "python(_sleepy:Sleepy, ms=5)"


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    data = Dataset("bench", tuple(Sample(f"s{i}", f"text {i}", "benign") for i in range(n)))
    defense = build_defense(SPEC)
    # on 127.0.0.1 only, like every Ray that shieldbench starts
    ray = start_local_ray(
        num_cpus=workers, log_to_driver=False, _temp_dir=tempfile.mkdtemp(prefix="sbray-")
    )
    t0 = time.perf_counter()
    local = run_defense(
        defense, data, config=RunConfig(concurrency=workers, warmup=0, timeout_s=30.0)
    )
    local_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    with RayExecutor(SPEC, workers=workers, batch_size=64) as pool:
        remote = run_defense(
            defense, data, config=RunConfig(concurrency=1, warmup=0, timeout_s=30.0),
            defense_spec=SPEC, executor=pool,
        )  # fmt: skip
    ray_s = time.perf_counter() - t0
    ray.shutdown()
    same = [o.verdict for o in local.outcomes] == [o.verdict for o in remote.outcomes]
    ideal = n * 0.005 / workers
    ratio = ray_s / local_s
    print(f"{n:,} texts x 5 ms, {workers} calls in flight; ideal {ideal:.1f} s")
    print(f"  local engine ({workers} threads)      {local_s:7.1f} s  {local_s / ideal:.2f}x ideal")
    print(f"  Ray executor ({workers} workers)      {ray_s:7.1f} s  {ray_s / ideal:.2f}x ideal")
    print(f"  Ray vs local                     {ratio:7.2f}x  target <= 1.3x"
          f" {'met' if ratio <= 1.3 else 'MISSED'}; same verdicts: {same}")  # fmt: skip
    return 0 if ratio <= 1.3 and same else 1


if __name__ == "__main__":
    raise SystemExit(main())
