"""Bounded memory: streamed, hashed-on-the-way datasets, columnar records, windowed engine.

The large-data paths must give exactly what the small-data paths give: the same
samples and content hash whether a file is read whole or streamed into columns, the
same run file and the same statistics whether records are objects or Arrow columns.
The engine must take samples from the dataset a window at a time (checked with a
dataset that records how far it has been read while the defense screens).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shieldbench._views import RecordView
from shieldbench.datasets import Dataset, content_hash, load_jsonl
from shieldbench.datasets._builder import SampleBuilder
from shieldbench.datasets._files import decode_utf8
from shieldbench.datasets._records import RecordMapping
from shieldbench.engine import run_defense
from shieldbench.engine._run import window_size
from shieldbench.errors import DatasetError
from shieldbench.metrics import summarize
from shieldbench.runfiles import (
    CHUNK,
    ColumnBuilder,
    ParquetRows,
    outcome_columns,
    outcomes_from,
)
from shieldbench.runio import load_run, save_run
from shieldbench.store import _runwrite, _samples, open_store
from shieldbench.types import DefenseInfo, ErrorPolicy, Outcome, Run, RunConfig, Sample, Verdict

QUIET = RunConfig(warmup=0)


def _records(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        record: dict[str, object] = {
            "id": f"s{i}",
            "text": f"ignore the rules {i}" if i % 3 == 0 else f"hello number {i}",
            "label": "attack" if i % 3 == 0 else "benign",
            "category": f"cat{i % 4}/sub{i % 2}",
        }
        if i % 5 == 0:
            record["language"] = "en"
            record["severity"] = "high"
        if i % 7 == 0:
            record["messages"] = [{"role": "system", "content": "be nice"},
                                  {"role": "user", "content": f"turn {i}"}]  # fmt: skip
            record.pop("text")
        out.append(record)
    return out


def _build(records: list[dict[str, object]], *, chunk: int) -> Dataset:
    builder = SampleBuilder("data.jsonl", RecordMapping(), chunk=chunk)
    for line, record in enumerate(records, start=1):
        builder.add(record, line=line)
    return builder.build("inline")


def test_a_dataset_streamed_into_columns_has_the_samples_and_hash_of_the_eager_one() -> None:
    records = _records(50)
    eager = _build(records, chunk=CHUNK)  # one chunk: a tuple of samples, as always
    columnar = _build(records, chunk=8)  # seven chunks of columns
    assert isinstance(eager.samples, tuple)
    assert isinstance(columnar.samples, ParquetRows)
    assert list(columnar) == list(eager)
    assert [dict(s.metadata) for s in columnar] == [dict(s.metadata) for s in eager]
    assert [s.messages for s in columnar] == [s.messages for s in eager]
    # the hash computed while streaming is the hash of the samples, computed afresh
    assert columnar.content_hash == eager.content_hash == content_hash(list(eager))
    assert columnar.label_counts() == eager.label_counts() == {"attack": 17, "benign": 33}
    assert columnar.info == eager.info


def test_a_jsonl_file_is_streamed_with_the_hash_of_its_samples(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    lines = [json.dumps(r) for r in _records(30)]
    path.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines[:10]).encode() + b"\n\n"
                     + "\n".join(lines[10:]).encode())  # fmt: skip
    ds = load_jsonl(path)
    assert len(ds) == 30
    assert ds.content_hash == content_hash(tuple(ds.samples))
    assert ds.content_hash == _build(_records(30), chunk=CHUNK).content_hash


def test_a_streamed_file_names_the_line_and_offset_of_bad_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"text": "a", "label": 0}\n{"text": "b\xff", "label": 1}\n')
    with pytest.raises(DatasetError) as info:
        load_jsonl(path)
    assert info.value.line == 2
    with pytest.raises(DatasetError) as whole:  # the message of the file read whole
        decode_utf8(path.read_bytes(), path)
    assert str(info.value) == str(whole.value)
    assert "byte 0xff at byte offset 37 (column 12)" in str(info.value)
    (tmp_path / "blank.jsonl").write_text("\n  \n")
    with pytest.raises(DatasetError, match="the file is empty"):
        load_jsonl(tmp_path / "blank.jsonl")


def test_an_id_repeated_in_another_chunk_is_an_error_naming_both_lines() -> None:
    records = _records(20)
    records[17]["id"] = "s3"
    with pytest.raises(DatasetError) as info:
        _build(records, chunk=5)
    assert (info.value.line, info.value.field) == (18, "id")
    assert "duplicate id 's3' (first used on line 4)" in str(info.value)


class _Recording(RecordView[Sample]):
    """A dataset read as a stream: it notes how many samples it has handed out."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.handed_out = 0

    def __len__(self) -> int:
        return self.n

    def chunks(self) -> Iterator[list[Sample]]:
        for start in range(0, self.n, 1000):
            block = [
                Sample(f"s{i}", "ignore it" if i % 2 else "hello", "attack" if i % 2 else "benign")
                for i in range(start, min(start + 1000, self.n))
            ]
            self.handed_out += len(block)
            yield block

    def _get(self, index: int) -> Sample:
        raise AssertionError("the engine must not index the dataset")


class _Watching:
    """Blocks 'ignore'; records how far ahead of the screening the dataset was read."""

    name = "watching"

    def __init__(self, data: _Recording) -> None:
        self.data = data
        self.checked = 0
        self.lead = 0

    def check(self, text: str) -> Verdict:
        self.checked += 1
        self.lead = max(self.lead, self.data.handed_out - self.checked)
        return Verdict("ignore" in text, score=1.0 if "ignore" in text else 0.0)


@pytest.mark.slow
def test_the_engine_reads_the_dataset_a_window_at_a_time(tmp_path: Path) -> None:
    size = window_size(QUIET)
    n = 2 * size + 1234
    data = _Recording(n)
    defense = _Watching(data)
    run = run_defense(defense, Dataset("stream", data, "sha256:given"), config=QUIET)
    assert (defense.checked, data.handed_out) == (n, n)
    # never more than one window (plus the chunk being read) ahead of the defense
    assert defense.lead <= size + 1000
    assert isinstance(run.outcomes, ParquetRows)  # past one window: outcomes on disk
    assert [o.sample_id for o in run.outcomes] == [f"s{i}" for i in range(n)]
    assert sum(o.verdict is not None and o.verdict.blocked for o in run.outcomes) == n // 2
    path = save_run(run, tmp_path / "run.parquet")
    again = load_run(path)
    assert list(again.outcomes) == list(run.outcomes)
    assert list(again.samples) == list(data)


class _Interrupting:
    name = "interrupting"

    def __init__(self, stop_after: int | None) -> None:
        self.stop_after = stop_after
        self.calls = 0

    def check(self, text: str) -> Verdict:
        self.calls += 1
        if self.stop_after is not None and self.calls > self.stop_after:
            raise KeyboardInterrupt
        return Verdict("ignore" in text)


@pytest.mark.slow
def test_a_windowed_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    size = window_size(QUIET)
    n = size + 5000
    data = Dataset("stream", _Recording(n), "sha256:given")
    checkpoint = tmp_path / "ck.jsonl"
    with pytest.raises(KeyboardInterrupt):  # stopped in the second window
        run_defense(_Interrupting(size + 100), data, config=QUIET, checkpoint=checkpoint)
    again = _Interrupting(None)
    data = Dataset("stream", _Recording(n), "sha256:given")
    run = run_defense(again, data, config=QUIET, checkpoint=checkpoint, resume=True)
    assert again.calls == n - (size + 100)
    assert run.environment["resumed_outcomes"] == str(size + 100)
    assert [o.sample_id for o in run.outcomes] == [f"s{i}" for i in range(n)]


def _outcome(i: int) -> Outcome:
    if i % 11 == 0:
        return Outcome(f"s{i}", None, "error", "RuntimeError: boom", 2.0)
    if i % 13 == 0:
        return Outcome(f"s{i}", None, "timeout", "timed out", 30.0, attempts=2)
    blocked = i % 3 == 0 or i % 17 == 0
    return Outcome(f"s{i}", Verdict(blocked, score=(i % 10) / 10 + (0.05 if blocked else 0),
                                    label="X", reasons=("r",) if blocked else ()),
                   "ok", None, 1.0 + i % 7)  # fmt: skip


@pytest.mark.parametrize("policy", ["fail_closed", "fail_open", "exclude"])
def test_metrics_over_columns_equal_metrics_over_objects(policy: ErrorPolicy) -> None:
    data = _build(_records(400), chunk=64)
    outcomes: ColumnBuilder[Outcome] = ColumnBuilder(outcome_columns, outcomes_from, chunk=64)
    outcomes.extend([_outcome(i) for i in range(400)])
    columns = outcomes.finish()
    config = RunConfig(error_policy=policy)
    now = datetime(2026, 1, 1, tzinfo=UTC)
    head = (DefenseInfo("x", "x"), data.info, config)
    columnar = Run("r", *head, data.samples, columns, now, now)
    objects = Run("r", *head, tuple(data), tuple(columns), now, now)
    assert isinstance(columnar.samples, ParquetRows)
    assert isinstance(objects.samples, tuple)
    assert summarize(columnar).to_dict() == summarize(objects).to_dict()


def test_the_store_inserts_a_large_run_in_chunks_and_reads_it_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_runwrite, "_INSERT_CHUNK", 7)  # 400 outcomes: 58 inserts
    monkeypatch.setattr(_samples, "_ENCODE_CHUNK", 9)  # the samples' document in 45 parts
    data = _build(_records(400), chunk=64)
    outcomes: ColumnBuilder[Outcome] = ColumnBuilder(outcome_columns, outcomes_from, chunk=64)
    outcomes.extend([_outcome(i) for i in range(400)])
    now = datetime(2026, 1, 1, tzinfo=UTC)
    run = Run("big-1", DefenseInfo("x", "x"), data.info, RunConfig(), data.samples,
              outcomes.finish(), now, now)  # fmt: skip
    store = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    try:
        assert store.add_run(run, git=(None, None))
        back = store.get_run("big-1")
    finally:
        store.close()
    assert list(back.outcomes) == list(run.outcomes)
    assert list(back.samples) == list(run.samples)


def test_the_samples_document_encoded_in_chunks_is_the_whole_list_encoded_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    samples = list(_build(_records(50), chunk=CHUNK))
    whole = _samples.sample_document(samples)  # one chunk
    monkeypatch.setattr(_samples, "_ENCODE_CHUNK", 4)
    assert _samples.sample_document(samples) == whole
    assert _samples.read_samples(whole) == tuple(samples)
    assert _samples.sample_document([]) == b"[]"
