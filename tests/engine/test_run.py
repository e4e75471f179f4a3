"""run_defense: the Run record, warm-up, progress, ownership and input validation."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Sequence

import pytest

from shieldbench.datasets import Dataset
from shieldbench.engine import _calls, new_run_id, run_defense, screen
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig, Sample, Verdict

ALLOW = Verdict(blocked=False, score=0.0)


def make_dataset(n: int = 30, name: str = "inline:test") -> Dataset:
    samples = tuple(
        Sample(f"s{i:03d}", f"text number {i}", "attack" if i % 2 else "benign") for i in range(n)
    )
    return Dataset(name, samples)


class Counting:
    name = "counting"
    version = "1.2.3"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.closed = False
        self.lock = threading.Lock()

    def check(self, text: str) -> Verdict:
        with self.lock:
            self.texts.append(text)
        return Verdict(blocked=text.endswith(("1", "3", "5", "7", "9")), score=0.5)

    def close(self) -> None:
        self.closed = True


def test_run_record_is_complete_and_in_dataset_order() -> None:
    data = make_dataset()
    defense = Counting()
    before = time.time()
    run = run_defense(defense, data, config=RunConfig(warmup=0, concurrency=4))
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run.id)
    assert (run.defense.spec, run.defense.name, run.defense.version) == (
        "counting",
        "counting",
        "1.2.3",
    )
    assert run.dataset == data.info
    assert run.config == RunConfig(warmup=0, concurrency=4)
    assert run.samples == data.samples
    assert [o.sample_id for o in run.outcomes] == [s.id for s in data.samples]
    assert all(o.status == "ok" for o in run.outcomes)
    assert run.started.tzinfo is not None
    assert run.finished.tzinfo is not None
    assert before - 1 <= run.started.timestamp() <= run.finished.timestamp() <= time.time() + 1
    env = run.environment
    assert set(env) >= {"python", "platform", "cpu_count", "shieldbench", "capability"}
    assert env["capability"] == "check"
    assert "resumed_outcomes" not in env
    assert not defense.closed  # the caller owns the defense


def test_spec_and_run_id_can_be_given() -> None:
    run = run_defense(
        Counting(), make_dataset(3), defense_spec="python:pkg.mod:make", run_id="nightly-7"
    )
    assert (run.id, run.defense.spec, run.defense.name) == (
        "nightly-7",
        "python:pkg.mod:make",
        "counting",
    )


@pytest.mark.parametrize("bad", ["", "../escape", "a/b", "white space", ".hidden", "x" * 200])
def test_unsafe_run_ids_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError, match="not filesystem-safe"):
        run_defense(Counting(), make_dataset(2), run_id=bad)


def test_new_run_ids_differ() -> None:
    assert len({new_run_id() for _ in range(50)}) == 50


def test_defense_package_is_recorded_when_known() -> None:
    class FromPackage(Counting):
        pass

    FromPackage.__module__ = "shieldbench.defenses.fake"
    run = run_defense(FromPackage(), make_dataset(2), config=RunConfig(warmup=0))
    assert run.environment["defense_package"] == f"shieldbench {run.environment['shieldbench']}"


def test_bad_inputs_fail_fast_with_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="not a Defense"):
        run_defense(object(), make_dataset(2))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a Dataset"):
        run_defense(Counting(), [Sample("1", "x", "benign")])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="must be a RunConfig"):
        run_defense(Counting(), make_dataset(2), config={"concurrency": 2})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs the checkpoint path"):
        run_defense(Counting(), make_dataset(2), resume=True)
    with pytest.raises(ConfigError, match="not one string"):
        screen(Counting(), "just one text")
    with pytest.raises(ConfigError, match=r"texts\[1\] is a int"):
        screen(Counting(), ["ok", 3])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match="2 ids for 3 texts"):
        screen(Counting(), ["a", "b", "c"], ids=["x", "y"])


def test_empty_dataset_gives_an_empty_run() -> None:
    run = run_defense(Counting(), Dataset("empty", ()))
    assert run.outcomes == ()
    assert run.samples == ()


class SlowStart:
    """The first calls are slow (model loading); later ones fast."""

    name = "slow-start"

    def __init__(self, slow_calls: int) -> None:
        self.slow_calls = slow_calls
        self.calls = 0
        self.batch_calls = 0

    def check(self, text: str) -> Verdict:
        self.calls += 1
        if self.calls <= self.slow_calls:
            time.sleep(0.15)
        return ALLOW


class SlowStartAsync(SlowStart):
    async def acheck(self, text: str) -> Verdict:
        return self.check(text)


class SlowStartBatch(SlowStart):
    def check_batch(self, texts: Sequence[str]) -> list[Verdict]:
        self.batch_calls += 1
        if self.batch_calls <= self.slow_calls:
            time.sleep(0.15)
        return [ALLOW] * len(texts)


@pytest.mark.parametrize("cls", [SlowStart, SlowStartAsync, SlowStartBatch])
def test_warmup_calls_are_made_first_and_kept_out_of_latency(cls: type[SlowStart]) -> None:
    data = make_dataset(10)
    defense = cls(slow_calls=2)
    run = run_defense(defense, data, config=RunConfig(warmup=2, concurrency=1, batch_size=4))
    assert len(run.outcomes) == 10
    assert all(o.is_ok for o in run.outcomes)
    assert max(o.latency_ms or 0.0 for o in run.outcomes) < 100  # the 150 ms calls were warm-up
    if cls is SlowStartBatch:  # 10 texts < latency_sample: every text is timed alone
        assert defense.batch_calls == 2  # 2 warm-up batches (and 2 warm-up checks below)
        assert defense.calls == 2 + 10
    else:
        assert defense.calls == 2 + 10


def test_without_warmup_the_slow_first_calls_are_measured() -> None:
    run = run_defense(SlowStart(slow_calls=2), make_dataset(5), config=RunConfig(warmup=0))
    assert sorted(o.latency_ms or 0.0 for o in run.outcomes)[-2] >= 150


def test_warmup_errors_are_ignored_but_the_measured_call_records_them() -> None:
    class FailsFirst:
        name = "fails-first"
        calls = 0

        def check(self, text: str) -> Verdict:
            self.calls += 1
            if self.calls == 1:
                raise RuntimeError("cold start")
            return ALLOW

    run = run_defense(FailsFirst(), make_dataset(3), config=RunConfig(warmup=1))
    assert all(o.is_ok for o in run.outcomes)


@pytest.mark.parametrize("path", ["inline", "threads", "async"])
def test_progress_is_reported_from_zero_to_total_and_never_backwards(path: str) -> None:
    seen: list[tuple[int, int]] = []

    class Sleepy(Counting):
        def check(self, text: str) -> Verdict:
            time.sleep(0.005)
            return super().check(text)

    class SleepyAsync(Sleepy):
        async def acheck(self, text: str) -> Verdict:
            await asyncio.sleep(0.002)
            return ALLOW

    defense = SleepyAsync() if path == "async" else Sleepy()
    config = RunConfig(warmup=0, concurrency=2)
    if path == "inline":
        config = RunConfig(warmup=0, concurrency=1, timeout_s=None)
    run_defense(
        defense, make_dataset(100), config=config, progress=lambda d, t: seen.append((d, t))
    )
    assert seen[0] == (0, 100)
    assert seen[-1] == (100, 100)
    assert {t for _, t in seen} == {100}
    dones = [d for d, _ in seen]
    assert dones == sorted(dones)
    assert len(seen) >= 3  # intermediate updates while it ran (>= 0.25 s at 0.1 s intervals)


def test_the_engine_never_prints(capsys: pytest.CaptureFixture[str]) -> None:
    class Noisy(Counting):
        def check(self, text: str) -> Verdict:
            if text.endswith("3"):
                raise ValueError("bad")
            return super().check(text)

    run_defense(Noisy(), make_dataset(20), config=RunConfig(concurrency=3, timeout_s=1))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == ""


def test_late_result_of_a_call_past_its_timeout_counts_as_timeout() -> None:
    late = _calls.finish("s1", ALLOW, None, 1, elapsed_s=2.0, timeout_s=1.0)
    assert (late.status, late.verdict, late.attempts) == ("timeout", None, 1)
    in_time = _calls.finish("s1", ALLOW, None, 2, elapsed_s=0.5, timeout_s=1.0)
    assert (in_time.status, in_time.verdict, in_time.attempts) == ("ok", ALLOW, 2)
