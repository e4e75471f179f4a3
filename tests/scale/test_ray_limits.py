"""The Ray executor's limits: frozen workers, GPUs per worker, and progress.

On the session's local Ray cluster (``ray_cluster``: 2 CPUs and one declared GPU).
A frozen worker is a real one: the test defense stops its own process with SIGSTOP
(alive, silent: Ray does not replace it); the driver's deadline must.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shieldbench.cli import app
from shieldbench.cli._console import SafeConsole, progress
from shieldbench.cli._scale import make_executor
from shieldbench.datasets import Dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import RayExecutor, run_defense
from shieldbench.errors import ConfigError, RunError
from shieldbench.types import RunConfig, Sample

pytestmark = pytest.mark.usefixtures("ray_cluster")

CONFIG = RunConfig(warmup=0, batch_size=5, timeout_s=None)


def _data(n: int, *, freeze_at: int | None = None) -> Dataset:
    return Dataset(
        "inline",
        tuple(
            Sample(f"f{i}", "freeze now" if i == freeze_at else f"text {i}", "benign")
            for i in range(n)
        ),
    )


def test_a_frozen_worker_is_replaced_and_its_batch_screened_again(tmp_path: Path) -> None:
    spec = f"python(sb_raydefs:Freezer, once={tmp_path / 'froze'})"
    data = _data(30, freeze_at=12)
    with RayExecutor(spec, workers=2, batch_deadline_s=3.0) as pool:
        run = run_defense(
            build_defense(spec), data, config=CONFIG, defense_spec=spec, executor=pool,
            checkpoint=tmp_path / "ck.jsonl",
        )  # fmt: skip
        assert pool.replaced == 1
    assert (tmp_path / "froze").exists()  # a worker did freeze
    assert [o.sample_id for o in run.outcomes] == [s.id for s in data]
    assert {o.status for o in run.outcomes} == {"ok"}


def test_a_batch_that_freezes_every_worker_gets_timeout_outcomes() -> None:
    spec = "python:sb_raydefs:Freezer"
    data = _data(30, freeze_at=12)
    with RayExecutor(spec, workers=2, batch_deadline_s=2.0) as pool:
        run = run_defense(
            build_defense(spec), data, config=CONFIG, defense_spec=spec, executor=pool
        )
        assert pool.replaced == 2  # frozen twice, then given up on
    timeouts = [o for o in run.outcomes if o.status == "timeout"]
    assert [o.sample_id for o in timeouts] == [f"f{i}" for i in range(10, 15)]  # its batch
    assert "froze (no answer within 2 s) 2 times" in (timeouts[0].error or "")
    assert {o.status for o in run.outcomes if o not in timeouts} == {"ok"}


def test_gpus_per_worker_reach_the_actors() -> None:
    with RayExecutor("pattern", workers=1, gpus_per_worker=1) as pool:
        assert [len(ids) for ids in pool.worker_gpus()] == [1]
    with RayExecutor("pattern", workers=1) as pool:
        assert pool.worker_gpus() == [[]]


def test_more_gpus_than_a_node_has_is_a_clear_error_not_a_hang() -> None:
    with pytest.raises(
        ConfigError, match=r"asks for 2 GPU\(s\), but no node .* most on one node: 1"
    ):
        RayExecutor("pattern", workers=1, gpus_per_worker=2).start()
    # each fits a node, but not both at once: pending actors time out clearly
    pool = RayExecutor("pattern", workers=2, gpus_per_worker=1, start_timeout_s=3.0)
    with pytest.raises(RunError, match=r"did not start within 3 s: .* 2 x \(1 CPU, 1 GPU\)"):
        pool.start()


def test_the_gpus_option_is_checked_and_passed_on(tmp_path: Path) -> None:
    pool = make_executor("ray", "pattern", address=None, workers=3, gpus=0.5)
    assert pool is not None
    assert (pool.workers, pool.gpus_per_worker) == (3, 0.5)
    with pytest.raises(ConfigError, match="need --executor ray"):
        make_executor("local", "pattern", address=None, workers=None, gpus=1)
    with pytest.raises(ConfigError, match=">= 0"):
        make_executor("ray", "pattern", address=None, workers=None, gpus=-1)
    runner = CliRunner()
    out = tmp_path / "o"
    args = ["run", "-d", "pattern", "-D", "builtin:smoke", "--out", str(out), "--executor", "ray"]
    result = runner.invoke(app, [*args, "--gpus-per-worker", "4"])
    assert isinstance(result.exception, ConfigError)
    assert "asks for 4 GPU(s)" in str(result.exception)
    assert not out.exists()  # refused before anything was written
    result = runner.invoke(app, [*args, "--gpus-per-worker", "1", "--workers", "1"])
    assert result.exit_code == 0, result.output


def test_a_ray_run_reports_progress_with_throughput_and_eta() -> None:
    spec = "python(sb_raydefs:Slow, ms=30)"
    data = _data(120)
    buffer = io.StringIO()
    seen: list[tuple[int, int]] = []
    with (
        RayExecutor(spec, workers=2) as pool,
        progress(SafeConsole(file=buffer), "slow · inline", len(data), interval_s=0.0) as bar,
    ):

        def hook(done: int, total: int) -> None:
            seen.append((done, total))
            bar(done, total)

        run_defense(build_defense(spec), data, config=CONFIG, defense_spec=spec,
                    executor=pool, progress=hook)  # fmt: skip
    assert seen[0] == (0, 120)
    assert seen[-1] == (120, 120)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)  # never backwards
    assert len({d for d, _ in seen}) >= 4  # outcomes reported as batches come back
    lines = buffer.getvalue().splitlines()
    middle = [
        line for line in lines if "/120 (" in line and not line.startswith("slow · inline: 120/")
    ]
    assert middle, lines
    assert all("/s, ETA " in line for line in middle)
    assert lines[-1].startswith("slow · inline: 120/120 (100%)")


def test_the_terminal_bar_shows_the_throughput() -> None:
    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, width=80)
    with progress(console, "slow · inline", 100) as hook:
        for done in range(0, 60, 10):
            hook(done, 100)
            time.sleep(0.05)
    assert "/s" in buffer.getvalue()
