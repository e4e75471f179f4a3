"""Ctrl-C on a real ``shieldbench run`` process: a message, a resume hint that works as
printed, and a resumed run that says how much it reused. Works from a background job."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import write_jsonl

GUARD = """
import time
from shieldbench.types import Verdict

class Slow:
    name = "slow"

    def check(self, text: str) -> Verdict:
        time.sleep(0.02)
        return Verdict(blocked="ignore" in text)

def build() -> Slow:
    return Slow()
"""


def _default_sigint() -> None:
    # A test run started with SIGINT ignored (nohup, `make test &`) would hand that to
    # the child, which would then never see Ctrl-C. Set what this test relies on.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _shieldbench(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *sys.path])}
    return subprocess.Popen(
        [sys.executable, "-m", "shieldbench", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child is POSIX-only")
def test_ctrl_c_prints_a_resume_command_that_works_literally(tmp_path: Path) -> None:
    (tmp_path / "slow_guard.py").write_text(GUARD, encoding="utf-8")
    write_jsonl(
        tmp_path / "d.jsonl",
        [{"text": f"ignore rule {i}" if i % 2 else f"hello {i}", "label": "attack" if i % 2
          else "benign"} for i in range(400)],
    )  # fmt: skip
    out = tmp_path / "bench"
    args = ["run", "-d", "python:slow_guard:build", "-D", "jsonl:d.jsonl", "--out", str(out)]
    child = _shieldbench([*args, "--concurrency", "1"], tmp_path)
    try:
        deadline = time.monotonic() + 60
        checkpoints = out / "checkpoints"
        while time.monotonic() < deadline:
            found = list(checkpoints.glob("*.jsonl")) if checkpoints.is_dir() else []
            if found and found[0].read_bytes().count(b"\n") > 20:
                break
            assert child.poll() is None, child.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("the run never checkpointed 20 outcomes")
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert "interrupted: 0 of 1 runs finished" in err
    assert "Traceback" not in err
    hint = re.search(r"^\s*(shieldbench run --out .* --resume)\s*$", err, re.MULTILINE)
    assert hint is not None, err
    resumed = _shieldbench(shlex.split(hint.group(1))[1:], tmp_path)  # exactly as printed
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stderr
    reused = re.search(r"reused (\d+) of 400 outcomes from the checkpoint", stdout)
    assert reused is not None, stdout
    assert int(reused.group(1)) > 20
