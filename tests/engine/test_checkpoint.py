"""Checkpoint and resume in-process: file format, refusals, damage, interrupts, no duplicates."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from shieldbench.datasets import Dataset
from shieldbench.engine import run_defense
from shieldbench.engine._checkpoint import CHECKPOINT_KIND
from shieldbench.errors import ConfigError, RunError
from shieldbench.types import Outcome, RunConfig, Sample, Verdict

N = 40


def make_dataset(n: int = N, *, tweak: str = "") -> Dataset:
    return Dataset(
        "inline:ck",
        tuple(Sample(f"s{i:03d}", f"text {i}{tweak}", "benign") for i in range(n)),
    )


class Recorder:
    """Records which texts it screened; can interrupt the run after ``stop_after`` calls."""

    name = "recorder"

    def __init__(self, *, stop_after: int | None = None, how: str = "raise") -> None:
        self.texts: list[str] = []
        self.stop_after = stop_after
        self.how = how
        self.lock = threading.Lock()

    def check(self, text: str) -> Verdict:
        with self.lock:
            self.texts.append(text)
            count = len(self.texts)
        if self.stop_after is not None and count == self.stop_after:
            if self.how == "raise":
                raise KeyboardInterrupt  # like Ctrl-C arriving in the calling thread
            _thread.interrupt_main()  # Ctrl-C while the caller's thread supervises
        if self.stop_after is not None and count >= self.stop_after:
            time.sleep(0.05)  # the signal is handled before the run can finish
        return Verdict(blocked=False, score=0.25)


class AsyncRecorder(Recorder):
    async def acheck(self, text: str) -> Verdict:
        await asyncio.sleep(0.001)
        return self.check(text)


def lines_of(path: Path) -> list[dict]:
    raw = path.read_text(encoding="utf-8")
    assert raw.endswith("\n")
    return [json.loads(line) for line in raw.splitlines()]


INLINE = RunConfig(warmup=0, concurrency=1, timeout_s=None)
THREADS = RunConfig(warmup=0, concurrency=3, timeout_s=5)


def test_the_checkpoint_holds_a_header_and_one_line_per_outcome(tmp_path: Path) -> None:
    ck = tmp_path / "run.ckpt.jsonl"
    data = make_dataset()
    run = run_defense(Recorder(), data, checkpoint=ck, keep_checkpoint=True, config=THREADS)
    header, *rows = lines_of(ck)
    assert header["kind"] == CHECKPOINT_KIND
    assert header["run_id"] == run.id
    assert header["defense"]["spec"] == "recorder"
    assert header["dataset"]["content_hash"] == data.content_hash
    assert header["config"] == THREADS.to_dict()
    assert sorted(Outcome.from_dict(r).sample_id for r in rows) == [s.id for s in data.samples]
    assert {Outcome.from_dict(r) for r in rows} == set(run.outcomes)


def test_the_checkpoint_is_removed_after_a_successful_run(tmp_path: Path) -> None:
    ck = tmp_path / "sub" / "run.ckpt.jsonl"
    run_defense(Recorder(), make_dataset(5), checkpoint=ck)
    assert not ck.exists()


@pytest.mark.parametrize(
    ("config", "how", "cls"),
    [
        (INLINE, "raise", Recorder),
        (THREADS, "interrupt", Recorder),
        (RunConfig(warmup=0, concurrency=2), "raise", AsyncRecorder),
    ],
    ids=["inline", "threads", "async"],
)
def test_interrupt_leaves_a_valid_checkpoint_and_resume_finishes_the_run(
    tmp_path: Path, config: RunConfig, how: str, cls: type[Recorder]
) -> None:
    ck = tmp_path / "run.ckpt.jsonl"
    data = make_dataset()
    with pytest.raises(KeyboardInterrupt):
        run_defense(cls(stop_after=15, how=how), data, checkpoint=ck, config=config)
    header, *rows = lines_of(ck)  # every line complete: the writer closed cleanly
    done = {r["sample_id"] for r in rows}
    assert 0 < len(done) < N
    assert len(rows) == len(done)

    second = cls()
    run = run_defense(second, data, checkpoint=ck, resume=True, config=config)
    assert run.id == header["run_id"]
    assert run.started.isoformat() == header["started"]
    assert [o.sample_id for o in run.outcomes] == [s.id for s in data.samples]
    assert sorted(second.texts) == sorted(s.text for s in data.samples if s.id not in done)
    assert run.environment["resumed_outcomes"] == str(len(done))
    assert not ck.exists()


def test_resume_refuses_another_defense_spec(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_defense(Recorder(stop_after=3), make_dataset(), checkpoint=ck, config=INLINE)
    with pytest.raises(RunError, match="written by defense 'recorder', not 'pattern'"):
        run_defense(Recorder(), make_dataset(), checkpoint=ck, resume=True, defense_spec="pattern")


def test_resume_refuses_a_dataset_with_another_content_hash(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_defense(Recorder(stop_after=3), make_dataset(), checkpoint=ck, config=INLINE)
    with pytest.raises(RunError, match="the data changed"):
        run_defense(Recorder(), make_dataset(tweak="!"), checkpoint=ck, resume=True)


def test_resume_refuses_another_run_id(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_defense(Recorder(stop_after=3), make_dataset(), checkpoint=ck, config=INLINE)
    with pytest.raises(RunError, match="belongs to run"):
        run_defense(Recorder(), make_dataset(), checkpoint=ck, resume=True, run_id="other")


def test_an_existing_checkpoint_is_never_overwritten_without_resume(tmp_path: Path) -> None:
    ck = tmp_path / "ck.jsonl"
    ck.write_text("precious\n")
    with pytest.raises(RunError, match="already exists; resume it"):
        run_defense(Recorder(), make_dataset(), checkpoint=ck)
    assert ck.read_text() == "precious\n"


def test_resume_without_a_checkpoint_file_starts_fresh(tmp_path: Path) -> None:
    run = run_defense(Recorder(), make_dataset(4), checkpoint=tmp_path / "none.jsonl", resume=True)
    assert len(run.outcomes) == 4
    assert "resumed_outcomes" not in run.environment


def interrupted(tmp_path: Path, stop_after: int = 11) -> tuple[Path, list[str]]:
    ck = tmp_path / "ck.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run_defense(Recorder(stop_after=stop_after), make_dataset(), checkpoint=ck, config=INLINE)
    return ck, ck.read_text(encoding="utf-8").splitlines(keepends=True)


def test_a_truncated_last_line_is_ignored_and_cut_off(tmp_path: Path) -> None:
    ck, lines = interrupted(tmp_path)
    done = len(lines) - 1
    cut = lines[-1][: len(lines[-1]) // 2]  # the process died mid-write
    ck.write_text("".join(lines[:-1]) + cut, encoding="utf-8")
    second = Recorder()
    run = run_defense(
        second, make_dataset(), checkpoint=ck, resume=True, keep_checkpoint=True, config=INLINE
    )
    assert len(second.texts) == N - (done - 1)  # the cut sample is screened again
    assert [o.sample_id for o in run.outcomes] == [s.id for s in make_dataset().samples]
    rows = lines_of(ck)[1:]  # the cut-off text is gone, every line parses
    assert sorted(r["sample_id"] for r in rows) == [s.id for s in make_dataset().samples]


def test_duplicate_lines_never_give_duplicate_outcomes(tmp_path: Path) -> None:
    ck, lines = interrupted(tmp_path)
    ck.write_text("".join(lines + lines[1:4]), encoding="utf-8")
    second = Recorder()
    run = run_defense(second, make_dataset(), checkpoint=ck, resume=True, config=INLINE)
    assert len(run.outcomes) == N
    assert len({o.sample_id for o in run.outcomes}) == N
    assert len(second.texts) == N - (len(lines) - 1)


def test_a_damaged_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    ck, lines = interrupted(tmp_path)
    lines[3] = '{"sample_id": "s001", "status": \n'
    ck.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(RunError, match=r"ck\.jsonl:4: damaged checkpoint line"):
        run_defense(Recorder(), make_dataset(), checkpoint=ck, resume=True)


def test_an_outcome_for_an_unknown_sample_is_an_error(tmp_path: Path) -> None:
    ck, lines = interrupted(tmp_path)
    row = json.loads(lines[1])
    row["sample_id"] = "nope"
    lines.append(json.dumps(row) + "\n")
    ck.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(RunError, match="sample 'nope', which is not in the dataset"):
        run_defense(Recorder(), make_dataset(), checkpoint=ck, resume=True)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty checkpoint"),
        ('{"kind": "something else"}\n', "not a shieldbench checkpoint"),
        ('{"kind": "shieldbench.checkpoint", "version": 99}\n', "version 99 is not supported"),
        ('{"kind": "shieldbench.checkpoint", "version": 1}\n', "bad checkpoint header"),
    ],
)
def test_files_that_are_not_checkpoints_are_refused(
    tmp_path: Path, content: str, message: str
) -> None:
    ck = tmp_path / "ck.jsonl"
    ck.write_text(content, encoding="utf-8")
    with pytest.raises(RunError, match=message):
        run_defense(Recorder(), make_dataset(), checkpoint=ck, resume=True)


def test_resume_flag_needs_a_path() -> None:
    with pytest.raises(ConfigError):
        run_defense(Recorder(), make_dataset(), resume=True)


class Jittery:
    """Calls that take about as long as the timeout: worker and supervisor race to record."""

    name = "jittery"

    def __init__(self, seed: int) -> None:
        import random

        self.rnd = random.Random(seed)
        self.lock = threading.Lock()

    def _delay(self) -> float:
        with self.lock:
            return self.rnd.uniform(0.0, 0.04)

    def check(self, text: str) -> Verdict:
        time.sleep(self._delay())
        return Verdict(blocked=False)

    def check_batch(self, texts: list[str]) -> list[Verdict]:
        time.sleep(self._delay())
        if text_hash(texts) % 4 == 0:
            raise RuntimeError("this batch fails; its texts go one by one to check")
        return [Verdict(blocked=True)] * len(texts)


def text_hash(texts: list[str]) -> int:
    return sum(len(t) * (i + 1) for i, t in enumerate(texts))


class JitteryCheckOnly(Jittery):
    check_batch = None  # type: ignore[assignment]


@pytest.mark.parametrize("cls", [JitteryCheckOnly, Jittery], ids=["threads", "batch"])
@pytest.mark.slow
def test_racing_timeouts_still_give_exactly_one_outcome_per_sample(
    tmp_path: Path, cls: type[Jittery]
) -> None:
    ck = tmp_path / "ck.jsonl"
    data = make_dataset(160)
    config = RunConfig(warmup=0, concurrency=8, timeout_s=0.02, batch_size=3)
    run = run_defense(cls(seed=7), data, config=config, checkpoint=ck, keep_checkpoint=True)
    rows = [Outcome.from_dict(r) for r in lines_of(ck)[1:]]
    assert sorted(o.sample_id for o in rows) == [s.id for s in data.samples]
    assert set(rows) == set(run.outcomes)
    statuses = {o.status for o in run.outcomes}
    assert statuses == {"ok", "timeout"}  # both sides of the race were exercised


def test_resuming_a_finished_checkpoint_screens_nothing_and_duplicates_nothing(
    tmp_path: Path,
) -> None:
    ck = tmp_path / "ck.jsonl"
    first = run_defense(Recorder(), make_dataset(), checkpoint=ck, keep_checkpoint=True)
    again = Recorder()
    run = run_defense(again, make_dataset(), checkpoint=ck, resume=True, config=INLINE)
    assert again.texts == []  # no warm-up either: there is nothing left to measure
    assert run.outcomes == first.outcomes
    assert run.id == first.id
    assert run.environment["resumed_outcomes"] == str(N)
