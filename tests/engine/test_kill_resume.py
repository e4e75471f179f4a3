"""Really kill a run (SIGKILL, SIGINT) in a subprocess; resuming gives one outcome per sample."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shieldbench.datasets import Dataset
from shieldbench.engine import run_defense
from shieldbench.types import RunConfig, Sample, Verdict

N = 300

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from shieldbench.datasets import Dataset
    from shieldbench.engine import run_defense
    from shieldbench.types import RunConfig, Sample, Verdict

    class Sleepy:
        name = "sleepy"
        def check(self, text):
            time.sleep(0.02)  # 300 texts: >= 1.5 s at concurrency 4, time to kill it
            return Verdict(blocked=text.endswith("7"), score=0.5)

    class SleepyAsync(Sleepy):
        async def acheck(self, text):
            await asyncio.sleep(0.05)
            return Verdict(blocked=text.endswith("7"), score=0.5)

    path, concurrency = sys.argv[2], int(sys.argv[3])
    defense = SleepyAsync() if sys.argv[1] == "async" else Sleepy()
    timeout = None if sys.argv[1] == "inline" else 10.0
    data = Dataset("kill-test", tuple(Sample(f"s{{i:04d}}", f"text {{i}}", "benign")
                                      for i in range({n})))
    config = RunConfig(warmup=0, concurrency=concurrency, timeout_s=timeout)
    run_defense(defense, data, config=config, checkpoint=path)
    print("finished", flush=True)
    """
).format(n=N)


def dataset() -> Dataset:
    return Dataset("kill-test", tuple(Sample(f"s{i:04d}", f"text {i}", "benign") for i in range(N)))


class Fast:
    name = "sleepy"  # the same spec as the killed run

    def __init__(self) -> None:
        self.texts: list[str] = []

    def check(self, text: str) -> Verdict:
        self.texts.append(text)
        return Verdict(blocked=text.endswith("7"), score=0.5)


def start_and_stop(tmp_path: Path, mode: str, concurrency: int, sig: int) -> tuple[Path, int, str]:
    """Start the child, wait until its checkpoint has some outcomes, send ``sig``."""
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    ck = tmp_path / "run.ckpt.jsonl"
    child = subprocess.Popen(
        [sys.executable, str(script), mode, str(ck), str(concurrency)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Under nohup or a background job SIGINT arrives ignored and the child would
        # inherit that: give it the default disposition, so Python installs its handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if ck.exists() and ck.read_bytes().count(b"\n") > 30:
                break
            assert child.poll() is None, child.communicate()
            time.sleep(0.02)
        else:
            pytest.fail("the child never checkpointed 30 outcomes")
        child.send_signal(sig)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "finished" not in out, "the run ended before it could be interrupted"
    return ck, child.returncode, err


def resume_and_check(ck: Path) -> None:
    header = json.loads(ck.read_text(encoding="utf-8").splitlines()[0])
    restored = {
        json.loads(line)["sample_id"]
        for line in ck.read_text(encoding="utf-8").split("\n")[1:-1]  # a cut last line is dropped
    }
    assert 0 < len(restored) < N
    fast = Fast()
    run = run_defense(fast, dataset(), checkpoint=ck, resume=True, config=RunConfig(warmup=0))
    assert run.id == header["run_id"]
    assert [o.sample_id for o in run.outcomes] == [s.id for s in dataset().samples]
    assert all(o.is_ok for o in run.outcomes)
    screened_again = sorted(fast.texts)
    assert screened_again == sorted(s.text for s in dataset().samples if s.id not in restored)
    assert run.environment["resumed_outcomes"] == str(len(restored))
    assert not ck.exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "concurrency"), [("threads", 4), ("async", 8)], ids=["threads", "async"]
)
def test_sigkill_mid_run_then_resume_gives_one_outcome_per_sample(
    tmp_path: Path, mode: str, concurrency: int
) -> None:
    ck, code, _ = start_and_stop(tmp_path, mode, concurrency, signal.SIGKILL)
    assert code == -signal.SIGKILL
    resume_and_check(ck)


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child is POSIX-only")
@pytest.mark.parametrize(
    ("mode", "concurrency"),
    [("inline", 1), ("threads", 4), ("async", 8)],
    ids=["inline", "threads", "async"],
)
def test_sigint_leaves_a_clean_checkpoint_then_resume_finishes(
    tmp_path: Path, mode: str, concurrency: int
) -> None:
    ck, code, err = start_and_stop(tmp_path, mode, concurrency, signal.SIGINT)
    assert code == -signal.SIGINT  # KeyboardInterrupt re-raised to the top
    assert "KeyboardInterrupt" in err
    raw = ck.read_text(encoding="utf-8")
    assert raw.endswith("\n")  # closed cleanly: no cut-off line
    for line in raw.splitlines():
        json.loads(line)
    resume_and_check(ck)
