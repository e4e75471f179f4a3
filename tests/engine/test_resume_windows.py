"""Resume by position, window by window: no set of every id, exactly the missing samples.

A checkpoint's outcome lines carry their sample's dataset position; a resume spills
them to disk and looks them up a window at a time (``shieldbench.engine._resume``).
Whatever subset of outcomes the checkpoint holds, in whatever order, duplicated or
not, the resumed run screens exactly the samples it lacks, reuses every outcome it
has (the first of duplicates), and never builds the set of every id (the in-memory
reader of older checkpoints is not called).
"""

from __future__ import annotations

import json
import random
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shieldbench.datasets import Dataset
from shieldbench.engine import _resume, _run, run_defense
from shieldbench.errors import RunError
from shieldbench.types import RunConfig, Sample, Verdict

N = 90
QUIET = RunConfig(warmup=0, concurrency=1)


class Keyword:
    name = "keyword"

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def check(self, text: str) -> Verdict:
        with self.lock:
            self.texts.append(text)
        return Verdict(blocked="7" in text, score=0.9 if "7" in text else 0.1)


DATA = Dataset("inline:w", tuple(Sample(f"s{i:03d}", f"text {i}", "benign") for i in range(N)))


def _full_lines(folder: Path) -> tuple[str, list[str]]:
    ck = folder / "full.jsonl"
    run_defense(Keyword(), DATA, config=QUIET, checkpoint=ck, keep_checkpoint=True)
    lines = ck.read_text(encoding="utf-8").splitlines(keepends=True)
    return lines[0], lines[1:]


@pytest.fixture(autouse=True)
def _small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_run, "window_size", lambda config: 20)  # five windows
    monkeypatch.setattr(_resume, "CHUNK", 7)  # many spilled row groups

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the in-memory reader of old checkpoints was used")

    monkeypatch.setattr(_resume, "read_checkpoint", refuse)


@settings(max_examples=20, deadline=None)
@given(st.sets(st.integers(0, N - 1)), st.randoms(use_true_random=False), st.booleans())
def test_resume_screens_exactly_the_missing_samples(
    kept: set[int], rng: random.Random, duplicate: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        head, lines = _full_lines(folder)
        by_position = {json.loads(line)["position"]: line for line in lines}
        chosen = [by_position[p] for p in sorted(kept)]
        rng.shuffle(chosen)
        if duplicate and chosen:
            chosen.append(chosen[0])
        ck = folder / "ck.jsonl"
        ck.write_text(head + "".join(chosen), encoding="utf-8")
        defense = Keyword()
        run = run_defense(defense, DATA, config=QUIET, checkpoint=ck, resume=True)
    screened = sorted(defense.texts)
    assert screened == sorted(f"text {i}" for i in range(N) if i not in kept)
    assert [o.sample_id for o in run.outcomes] == [s.id for s in DATA]
    assert [o.verdict.blocked for o in run.outcomes if o.verdict] == ["7" in s.text for s in DATA]
    assert run.environment.get("resumed_outcomes", "0") == str(len(kept))


def test_a_position_that_holds_another_sample_is_refused(tmp_path: Path) -> None:
    head, lines = _full_lines(tmp_path)
    row = json.loads(lines[3])
    row["position"] = 50  # the outcome of s003 claimed for s050
    ck = tmp_path / "ck.jsonl"
    ck.write_text(head + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(RunError, match="'s003', which is not in the dataset at position 50"):
        run_defense(Keyword(), DATA, config=QUIET, checkpoint=ck, resume=True)


def test_a_position_outside_the_dataset_is_refused(tmp_path: Path) -> None:
    head, lines = _full_lines(tmp_path)
    row = json.loads(lines[0])
    row["position"] = N
    ck = tmp_path / "ck.jsonl"
    ck.write_text(head + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(RunError, match=f"position {N}, outside the dataset's {N} samples"):
        run_defense(Keyword(), DATA, config=QUIET, checkpoint=ck, resume=True)


def test_an_older_checkpoint_without_positions_still_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shieldbench.engine._checkpoint import read_checkpoint

    monkeypatch.setattr(_resume, "read_checkpoint", read_checkpoint)  # allowed here
    head, lines = _full_lines(tmp_path)
    old = []
    for line in lines[:30]:
        row = json.loads(line)
        del row["position"]
        old.append(json.dumps(row) + "\n")
    ck = tmp_path / "ck.jsonl"
    ck.write_text(head + "".join(old), encoding="utf-8")
    defense = Keyword()
    run = run_defense(defense, DATA, config=QUIET, checkpoint=ck, resume=True)
    assert len(defense.texts) == N - 30
    assert run.environment["resumed_outcomes"] == "30"
