"""The same bad records through every file loader: each error names file, line and field.

``test_file_loaders.py`` walks JSONL's bad-input paths in depth; this module checks that
every other file format (CSV, parquet, PINT YAML, ``hf-disk``) stops on the same bad
records -- empty text, missing text, unknown or missing label, duplicate ids, invalid
UTF-8 -- at the line where the record is, in that format's sense of "line" (physical
line for JSONL and YAML, the record's start line for CSV with the header on line 1,
the 1-based row for the tables).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shieldbench.datasets import load_dataset
from shieldbench.errors import DatasetError

Record = dict[str, Any]
# A writer puts records in a file of its format and returns (spec, line of each record);
# it gets the ``hf_dataset`` fixture (the save_to_disk layout writer) too.
HF = Callable[..., Path]
Writer = Callable[[Path, list[Record], HF], tuple[str, list[int]]]

_BAD_BYTE = "@@BAD@@"  # replaced by an invalid UTF-8 byte in the text formats


def _encode(text: str) -> bytes:
    return text.encode("utf-8").replace(_BAD_BYTE.encode(), b"caf\xe9")


def _jsonl(folder: Path, records: list[Record], _hf: HF) -> tuple[str, list[int]]:
    path = folder / "d.jsonl"
    path.write_bytes(_encode("\n".join(json.dumps(r) for r in records) + "\n"))
    return f"jsonl:{path}", list(range(1, len(records) + 1))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return '"' + str(value).replace('"', '""') + '"'


def _csv(folder: Path, records: list[Record], _hf: HF) -> tuple[str, list[int]]:
    path = folder / "d.csv"
    lines = ["id,text,label"] + [
        ",".join(_cell(r.get(k)) for k in ("id", "text", "label")) for r in records
    ]
    path.write_bytes(_encode("\n".join(lines) + "\n"))
    return f"csv:{path}", list(range(2, len(records) + 2))


def _pint(folder: Path, records: list[Record], _hf: HF) -> tuple[str, list[int]]:
    path = folder / "d.yaml"
    items = []
    for r in records:
        fields = [f"{k}: {json.dumps(v)}" for k, v in r.items()]
        items.append("- " + "\n  ".join([*fields, "category: chat"]))
    path.write_bytes(_encode("\n".join(items) + "\n"))
    per_item = len(records[0]) + 1
    return f"pint:{path}", [1 + i * per_item for i in range(len(records))]


def _columns(records: list[Record]) -> dict[str, list[Any]]:
    return {k: [r.get(k) for r in records] for k in ("id", "text", "label")}


def _parquet(folder: Path, records: list[Record], _hf: HF) -> tuple[str, list[int]]:
    path = folder / "d.parquet"
    pq.write_table(pa.table(_columns(records)), path)
    return f"parquet:{path}", list(range(1, len(records) + 1))


def _hf_disk(folder: Path, records: list[Record], hf: HF) -> tuple[str, list[int]]:
    out = hf(folder / "hf", _columns(records))
    return f"hf-disk:{out}", list(range(1, len(records) + 1))


WRITERS: dict[str, Writer] = {
    "jsonl": _jsonl,
    "csv": _csv,
    "pint": _pint,
    "parquet": _parquet,
    "hf-disk": _hf_disk,
}
TEXT_FORMATS = ("jsonl", "csv", "pint")
GOOD: Record = {"id": "a", "text": "What is a good name for a cat?", "label": 0}

# (bad second record, field named, message)
CASES: dict[str, tuple[Record, str, str]] = {
    "empty text": ({"id": "b", "text": "   ", "label": 1}, "text", "empty text"),
    "missing text": ({"id": "b", "text": None, "label": 1}, "text", "got null"),
    "unknown label": ({"id": "b", "text": "Ignore it", "label": 7}, "label", "unknown label value"),
    "missing label": ({"id": "b", "text": "Ignore it", "label": None}, "label", "got null"),
    "duplicate id": ({"id": "a", "text": "Ignore it", "label": 1}, "id", "duplicate id 'a'"),
}


def _expect(spec: str, *, line: int | None, field: str | None, match: str) -> None:
    with pytest.raises(DatasetError, match=match) as info:
        load_dataset(spec)
    err = info.value
    assert (err.line, err.field) == (line, field), str(err)
    assert err.path is not None
    assert err.path in str(err)
    if line is not None:
        assert f":{line}:" in str(err)


@pytest.mark.parametrize("fmt", list(WRITERS))
def test_good_records_load(fmt: str, tmp_path: Path, hf_dataset: HF) -> None:
    records = [GOOD, {"id": "b", "text": "Ignore it", "label": 1}]
    spec, _ = WRITERS[fmt](tmp_path, records, hf_dataset)
    assert [(s.id, s.label) for s in load_dataset(spec)] == [("a", "benign"), ("b", "attack")]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("fmt", list(WRITERS))
def test_bad_record_names_file_line_and_field(
    fmt: str, case: str, tmp_path: Path, hf_dataset: HF
) -> None:
    bad, field, match = CASES[case]
    if fmt == "csv" and case == "missing text":
        # An empty CSV cell in the text column is empty text, not a missing value.
        match = "empty text"
    spec, lines = WRITERS[fmt](tmp_path, [GOOD, bad], hf_dataset)
    _expect(spec, line=lines[1], field=field, match=match)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_invalid_utf8_names_the_line(fmt: str, tmp_path: Path, hf_dataset: HF) -> None:
    bad = {"id": "b", "text": f"un {_BAD_BYTE} au lait", "label": 1}
    spec, _ = WRITERS[fmt](tmp_path, [GOOD, bad], hf_dataset)
    data = Path(spec.partition(":")[2]).read_bytes()
    line = data[: data.index(b"\xe9")].count(b"\n") + 1  # the physical line of the bad byte
    assert line > 1
    _expect(spec, line=line, field=None, match="not valid UTF-8")


@pytest.mark.parametrize("fmt", ["csv", "pint", "parquet", "hf-disk"])
def test_missing_text_column_is_named(fmt: str, tmp_path: Path, hf_dataset: HF) -> None:
    records = [{"id": "a", "body": "hello", "label": 0}]
    if fmt == "csv":
        path = tmp_path / "d.csv"
        path.write_text("id,body,label\na,hello,0\n")
        spec, line = f"csv:{path}", 1
    elif fmt == "pint":
        path = tmp_path / "d.yaml"
        path.write_text("- id: a\n  body: hello\n  label: false\n")
        spec, line = f"pint:{path}", 1
    elif fmt == "parquet":
        path = tmp_path / "d.parquet"
        pq.write_table(pa.Table.from_pylist(records), path)
        spec, line = f"parquet:{path}", None
    else:
        columns = {k: [r[k] for r in records] for k in records[0]}
        spec, line = f"hf-disk:{hf_dataset(tmp_path / 'hf', columns)}", None
    _expect(spec, line=line, field="text", match="text=")
