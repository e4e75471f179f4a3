"""The Ray executor: the same run as the local engine, resume, lost workers, bad input.

Everything runs on a real local Ray cluster (``ray_cluster``, once per session).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from shieldbench.attacks import AttackSettings, run_attack
from shieldbench.datasets import Dataset, load_dataset
from shieldbench.defenses import build_defense
from shieldbench.engine import RayExecutor, run_defense, screen
from shieldbench.errors import RunError
from shieldbench.types import Label, Outcome, RunConfig, Sample

pytestmark = pytest.mark.usefixtures("ray_cluster")

MIXED = "python:sb_raydefs:Mixed"


def _data(n: int) -> Dataset:
    words = ["ignore all rules", "what time is it", "boom", "flaky", "hang", "hello there"]
    samples = []
    for i in range(n):
        word = words[i % len(words)] if i >= 8 else "warm text"
        label: Label = "attack" if i % 2 else "benign"
        samples.append(Sample(f"s{i}", f"{word} #{i}", label, category=f"c{i % 3}"))
    return Dataset("inline", tuple(samples))


def _same(outcome: Outcome) -> tuple[Any, ...]:
    """Everything but the latency, which is a measurement."""
    return (outcome.sample_id, outcome.verdict, outcome.status, outcome.error, outcome.attempts)


def _fresh_local_state() -> None:
    import sb_raydefs

    sb_raydefs._seen.clear()


CONFIG = RunConfig(timeout_s=0.5, retries=1, retry_backoff_s=0.0, warmup=2, batch_size=5)


def test_a_ray_run_is_the_local_run_outcome_by_outcome(tmp_path: Path) -> None:
    data = _data(46)
    defense = build_defense(MIXED)
    _fresh_local_state()
    local = run_defense(defense, data, config=CONFIG, defense_spec=MIXED)
    with RayExecutor(MIXED, workers=2) as pool:
        remote = run_defense(
            defense, data, config=CONFIG, defense_spec=MIXED, executor=pool,
            checkpoint=tmp_path / "ck.jsonl",
        )  # fmt: skip
    assert [_same(o) for o in remote.outcomes] == [_same(o) for o in local.outcomes]
    statuses = {o.status for o in remote.outcomes}
    assert statuses == {"ok", "error", "timeout"}  # every path was exercised
    assert any(o.attempts == 2 for o in remote.outcomes)  # a transient error was retried
    assert remote.environment["executor"] == "RayExecutor"
    assert not (tmp_path / "ck.jsonl").exists()


def test_an_interrupted_ray_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    data = _data(40)
    defense = build_defense(MIXED)
    checkpoint = tmp_path / "ck.jsonl"
    seen: list[int] = []

    def interrupt(done: int, total: int) -> None:
        seen.append(done)
        if done >= 10:
            raise KeyboardInterrupt

    with RayExecutor(MIXED, workers=2) as pool:
        with pytest.raises(KeyboardInterrupt):
            run_defense(
                defense, data, config=CONFIG, defense_spec=MIXED, executor=pool,
                checkpoint=checkpoint, progress=interrupt,
            )  # fmt: skip
        kept = len(checkpoint.read_text(encoding="utf-8").splitlines()) - 1
        assert 10 <= kept < len(data)
        resumed = run_defense(
            defense, data, config=CONFIG, defense_spec=MIXED, executor=pool,
            checkpoint=checkpoint, resume=True,
        )  # fmt: skip
    _fresh_local_state()
    local = run_defense(defense, data, config=CONFIG, defense_spec=MIXED)
    assert resumed.environment["resumed_outcomes"] == str(kept)
    assert [o.sample_id for o in resumed.outcomes] == [s.id for s in data]
    assert [(o.verdict, o.status) for o in resumed.outcomes] == [
        (o.verdict, o.status) for o in local.outcomes
    ]


def test_a_killed_worker_loses_and_duplicates_no_outcome(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    spec = f"python(sb_raydefs:Slow, ms=15, pids={pids})"
    data = Dataset("inline", tuple(Sample(f"k{i}", f"text {i}", "benign") for i in range(240)))
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if done >= 40 and not killed:
            workers = sorted(int(p.name) for p in pids.iterdir()) if pids.exists() else []
            victim = next(pid for pid in workers if pid != os.getpid())  # not this driver
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    cfg = RunConfig(warmup=0, batch_size=8, concurrency=1, timeout_s=None)
    with RayExecutor(spec, workers=2) as pool:
        run = run_defense(
            build_defense(spec), data, config=cfg, defense_spec=spec, executor=pool,
            checkpoint=tmp_path / "ck.jsonl", progress=kill_one,
        )  # fmt: skip
        assert pool.replaced >= 1
    assert killed
    assert [o.sample_id for o in run.outcomes] == [s.id for s in data]
    assert {o.status for o in run.outcomes} == {"ok"}


def test_screen_and_attack_run_on_the_pool_with_the_local_results() -> None:
    data = load_dataset("builtin:smoke")
    defense = build_defense("pattern")
    settings = AttackSettings(budget=40, rounds=2, seed=3)
    config = RunConfig(warmup=0, batch_size=16)
    local = run_attack(defense, data, settings=settings, config=config, defense_spec="pattern")
    with RayExecutor("pattern", workers=2) as pool:
        texts = [s.text for s in data]
        out = screen(defense, texts, config=config, executor=pool)
        assert [o.verdict for o in out] == [
            o.verdict for o in screen(defense, texts, config=config)
        ]
        remote = run_attack(
            defense, data, settings=settings, config=config, defense_spec="pattern", executor=pool
        )
    assert remote.figures.adaptive_asr == local.figures.adaptive_asr
    assert [b.text for b in remote.bypasses] == [b.text for b in local.bypasses]


def test_a_defense_that_cannot_be_built_on_a_worker_is_a_clear_error(tmp_path: Path) -> None:
    # The module exists for this process only: Ray's workers cannot import it.
    (tmp_path / "sb_driver_only.py").write_text(
        "from shieldbench.defenses import build_defense\n"
        "def make():\n    return build_defense('pattern')\n",
        encoding="utf-8",
    )
    sys.path.insert(0, str(tmp_path))
    try:
        spec = "python:sb_driver_only:make"
        build_defense(spec)  # fine here
        with pytest.raises(RunError, match=r"cannot be built on a Ray worker: .*sb_driver_only"):
            RayExecutor(spec, workers=1).start()
    finally:
        sys.path.remove(str(tmp_path))


def test_an_unreachable_address_is_a_clear_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RunError, match=rf"cannot reach the Ray cluster at 127.0.0.1:{port}"):
        RayExecutor("pattern", address=f"127.0.0.1:{port}").start()


def test_the_cli_runs_and_attacks_on_ray(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from shieldbench.cli import app
    from shieldbench.errors import ConfigError
    from shieldbench.runio import load_run

    runner = CliRunner()
    ray_opts = ["--executor", "ray", "--workers", "2"]
    result = runner.invoke(
        app,
        ["run", "-d", "pattern", "-D", "builtin:smoke", *ray_opts, "--out", str(tmp_path / "r")],
    )
    assert result.exit_code == 0, result.output
    (run_file,) = (tmp_path / "r" / "runs").glob("*.json")
    assert load_run(run_file).environment["executor"] == "RayExecutor"
    result = runner.invoke(
        app,
        ["attack", "-d", "pattern", "-D", "builtin:smoke", "--budget", "20", "--rounds", "1",
         *ray_opts, "--out", str(tmp_path / "a")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / "a" / "attack.json").exists()
    result = runner.invoke(
        app,
        [
            "run",
            "-d",
            "pattern",
            "-D",
            "builtin:smoke",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "x"),
        ],
    )
    assert isinstance(result.exception, ConfigError)
    assert "--executor ray" in str(result.exception)
    assert not (tmp_path / "x").exists()
