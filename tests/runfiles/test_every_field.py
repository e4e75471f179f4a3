"""A field added to a record without the codec knowing it fails here, by name.

The codec is each record's ``to_dict`` / ``from_dict`` plus :data:`RUN_FIELDS` for
a Run's header; the columns are derived from the fields. These tests compare
:func:`dataclasses.fields` with what the codec writes, so the next field (a
per-call latency on ``Outcome``, say) cannot be dropped by one format silently.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shieldbench.engine._checkpoint import CheckpointHeader
from shieldbench.errors import RunError
from shieldbench.runfiles import (
    OUTCOME_COLUMNS,
    RECORD_FIELDS,
    RUN_FIELDS,
    SAMPLE_COLUMNS,
    plain,
    run_header,
)
from shieldbench.runio import load_run, run_from_dict, run_to_dict, save_run
from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)


def names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Every field set to a value that is not its default, so to_dict cannot leave it out.
SAMPLE = Sample("s1", "hi é", "attack", "jailbreak", "sub", "high", "novel", "src",
                {"k": {"nested": [1, "two"]}}, ({"role": "user", "content": "hi é"},))  # fmt: skip
VERDICT = Verdict(True, 0.9, "INJ", ("r",), {"path": "deep"})
OUTCOME = Outcome("s1", VERDICT, "ok", "note", 1.5, 2, {"answer": "no", "success": False})
RUN = Run("r1", DefenseInfo("pattern", "pattern", "1"),
          DatasetInfo("d", "sha256:0", 1, (("a", "b"),)), RunConfig(timeout_s=None),
          (SAMPLE,), (OUTCOME,), NOW, NOW, {"python": "3"}, 1,
          {"target": {"spec": "echo"}})  # fmt: skip
RECORDS: list[Any] = [
    SAMPLE, VERDICT, OUTCOME, DefenseInfo("p", "p", "1"), DatasetInfo("d", "h", 1), RunConfig()
]  # fmt: skip


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_to_dict_writes_every_field_and_from_dict_reads_it(record: Any) -> None:
    cls = type(record)
    written = record.to_dict()
    assert set(written) == names(cls), f"{cls.__name__}.to_dict misses or invents fields"
    back = cls.from_dict(written)
    for f in dataclasses.fields(cls):
        assert plain(getattr(back, f.name)) == plain(getattr(record, f.name)), f.name


def test_the_run_header_codec_has_one_entry_per_run_field() -> None:
    assert set(RUN_FIELDS) | set(RECORD_FIELDS) == names(Run)
    assert set(run_header(RUN)) == set(RUN_FIELDS) | {"kind"}  # end_to_end set: written
    assert set(run_to_dict(RUN)) == names(Run) | {"kind"}


def test_the_checkpoint_header_is_made_of_run_header_fields() -> None:
    renamed = {"run_id": "id"}
    assert {renamed.get(n, n) for n in names(CheckpointHeader)} <= set(RUN_FIELDS)


def test_every_record_field_has_a_column_and_column_names_are_unique() -> None:
    assert {c.key for c in SAMPLE_COLUMNS} == names(Sample)
    top = {c.key for c in OUTCOME_COLUMNS if c.parent is None}
    assert top | {c.parent for c in OUTCOME_COLUMNS if c.parent} == names(Outcome)
    assert {c.key for c in OUTCOME_COLUMNS if c.parent == "verdict"} == names(Verdict)
    counts = Counter(c.name for c in (*SAMPLE_COLUMNS, *OUTCOME_COLUMNS))
    assert {n for n, k in counts.items() if k > 1} == {"id"}  # the row's id, shared


def test_a_parquet_run_file_has_a_column_per_field(tmp_path: Path) -> None:
    path = save_run(RUN, tmp_path / "r.parquet")
    columns = set(pq.read_schema(path).names)
    assert {c.name for c in (*SAMPLE_COLUMNS, *OUTCOME_COLUMNS)} == columns
    back = load_run(path)
    assert plain(run_to_dict(back)) == plain(run_to_dict(RUN))
    assert back.samples[0].messages == SAMPLE.messages
    assert back.outcomes[0].end_to_end == OUTCOME.end_to_end
    assert back.end_to_end == RUN.end_to_end


def _first_layout(tmp_path: Path) -> Path:
    """A Parquet run file as shieldbench wrote it before messages and end_to_end had
    columns (attempts as int32, empty metadata null); copied from that version."""
    import json

    head = {k: v for k, v in run_header(RUN).items() if k != "end_to_end"}
    types = {"latency_ms": pa.float64(), "attempts": pa.int32(), "blocked": pa.bool_(),
             "score": pa.float64(), "reasons": pa.list_(pa.string())}  # fmt: skip
    rows = {"id": ["s1"], "text": ["hi"], "label": ["attack"], "category": ["c"],
            "subcategory": [None], "severity": [None], "tier": [None], "source": [None],
            "metadata": [None], "status": ["ok"], "error": [None], "latency_ms": [0.5],
            "attempts": [1], "blocked": [True], "score": [0.75], "verdict_label": [None],
            "reasons": [["r1"]], "details": ['{"path": "fast"}']}  # fmt: skip
    schema = pa.schema([(n, types.get(n, pa.string())) for n in rows])
    schema = schema.with_metadata({b"shieldbench.run": json.dumps(head)})
    path = tmp_path / "old.parquet"
    pq.write_table(pa.table(rows, schema=schema), path)
    return path


def test_a_parquet_file_of_the_first_layout_still_reads(tmp_path: Path) -> None:
    back = load_run(_first_layout(tmp_path))
    sample, outcome = back.samples[0], back.outcomes[0]
    assert (sample.messages, dict(sample.metadata), outcome.end_to_end) == (None, {}, None)
    assert outcome.verdict == Verdict(True, 0.75, None, ("r1",))
    assert dict(outcome.verdict.details) == {"path": "fast"}
    assert back.end_to_end == {}
    again = load_run(save_run(back, tmp_path / "again.parquet"))  # written in the new layout
    assert plain(run_to_dict(again)) == plain(run_to_dict(back))
    assert "messages" in pq.read_schema(tmp_path / "again.parquet").names


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("started"), r"r\.json: field 'started' is missing"),
        (lambda d: d.update(config=[1]), r"r\.json: field 'config': TypeError"),
        (
            lambda d: d["samples"][0].pop("label"),
            r"r\.json: samples\[0\]: field 'label' is missing",
        ),
        (lambda d: d["outcomes"][0].update(status="maybe"), r"r\.json: outcomes\[0\]: .*status"),
        (lambda d: d["samples"][0].update(messages="hi"), r"samples\[0\]: .*messages"),
        (lambda d: d.update(end_to_end=[1]), r"field 'end_to_end': TypeError"),
        (lambda d: d.pop("outcomes"), r"field 'outcomes' is missing"),
    ],
)
def test_bad_json_input_names_the_file_and_the_field(edit: Any, message: str) -> None:
    data = plain(run_to_dict(RUN))
    edit(data)
    with pytest.raises(RunError, match=message):
        run_from_dict(data, source="r.json")


@pytest.mark.parametrize(
    ("column", "cell", "message"),
    [
        ("label", "maybe", r"r\.parquet: sample 's1': .*label"),
        ("text", None, r"r\.parquet: sample 's1': .*column 'text' is null"),
    ],
)
def test_a_bad_parquet_cell_names_the_file_the_row_and_the_field(
    tmp_path: Path, column: str, cell: str | None, message: str
) -> None:
    path = save_run(RUN, tmp_path / "r.parquet")
    table = pq.read_table(path)
    bad = table.set_column(table.column_names.index(column), column, pa.array([cell], pa.string()))
    pq.write_table(bad.replace_schema_metadata(table.schema.metadata), path)
    with pytest.raises(RunError, match=message):
        list(load_run(path).samples)
