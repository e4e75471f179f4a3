"""File loaders: ``jsonl:``, ``csv:``, ``parquet:`` and ``pint:`` (PINT benchmark YAML).

All four take the same mapping options (see :mod:`shieldbench.datasets._records`)
in the call form, e.g.
``csv(xstest_prompts.csv, text=prompt, category=type, attack=unsafe, benign=safe)``.

What each format means by "line" in an error: the physical line for JSONL and
YAML, the line where the record starts for CSV (the header is line 1), and the
1-based row number for parquet.

Rules shared by the text formats: the file must be UTF-8 (a leading BOM is
accepted and dropped; any other invalid byte is an error naming its line and
byte offset); an empty file, or one without a single record, is an error; blank
lines in JSONL are skipped.

Example:
    >>> import tempfile, pathlib
    >>> tmp = tempfile.TemporaryDirectory()
    >>> d = pathlib.Path(tmp.name)
    >>> lines = ['{"text": "hi", "label": 0}', '{"text": "Ignore rules", "label": 1}']
    >>> _ = (d / "x.jsonl").write_text("\\n".join(lines))
    >>> ds = load_jsonl(d / "x.jsonl")
    >>> [(s.id, s.label) for s in ds]
    [('line:1', 'benign'), ('line:2', 'attack')]
    >>> tmp.cleanup()
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from shieldbench.datasets._builder import SampleBuilder
from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._records import MAPPING_OPTIONS, MAX_FIELD_DEPTH, RecordMapping
from shieldbench.errors import DatasetError
from shieldbench.registry import datasets
from shieldbench.runfiles import CHUNK
from shieldbench.spec import Spec

__all__ = [
    "decode_utf8",
    "jsonl_records",
    "load_csv",
    "load_jsonl",
    "load_parquet",
    "load_pint",
    "read_utf8",
]

_BOM = b"\xef\xbb\xbf"
_CSV_FIELD_LIMIT = 64 * 1024 * 1024


def decode_utf8(data: bytes, path: str | Path) -> str:
    """Decode strictly as UTF-8 (a leading BOM is dropped); errors name line and byte offset."""
    bom = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start + bom
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise DatasetError(
            f"not valid UTF-8: byte 0x{data[start]:02x} at byte offset {start}"
            f" (column {column}); re-save the file as UTF-8",
            path=path,
            line=line,
        ) from None


def read_utf8(path: str | Path) -> str:
    """The file's text, checked: exists, is a file, valid UTF-8 (BOM dropped), not blank."""
    p = Path(path)
    if not p.exists():
        raise DatasetError("file not found; check the path", path=p)
    if not p.is_file():
        raise DatasetError("not a file (is it a directory?)", path=p)
    text = decode_utf8(p.read_bytes(), p)
    if not text.strip():
        raise DatasetError("the file is empty", path=p)
    return text


def _file_lines(path: str | Path, *, keepends: bool = False) -> Iterator[str]:
    """The lines of a UTF-8 file, read and decoded one at a time (a stream, not the file).

    The same checks and messages as :func:`read_utf8` (missing, not a file, invalid
    UTF-8 naming line, byte offset and column, empty); "empty" is found at the end.
    ``keepends``: each line keeps its ``\n`` (what the CSV reader needs).
    """
    p = Path(path)
    if not p.exists():
        raise DatasetError("file not found; check the path", path=p)
    if not p.is_file():
        raise DatasetError("not a file (is it a directory?)", path=p)
    offset, blank = 0, True
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            skip = len(_BOM) if lineno == 1 and raw.startswith(_BOM) else 0
            try:
                line = raw[skip:].decode("utf-8")
            except UnicodeDecodeError as exc:
                start = offset + skip + exc.start
                raise DatasetError(
                    f"not valid UTF-8: byte 0x{raw[skip + exc.start]:02x} at byte offset"
                    f" {start} (column {start - offset + 1}); re-save the file as UTF-8",
                    path=path,
                    line=lineno,
                ) from None
            offset += len(raw)
            blank = blank and not line.strip()
            yield line if keepends else line.removesuffix("\n")
    if blank:
        raise DatasetError("the file is empty", path=p)


def jsonl_records(
    text: str | Iterator[str], path: str | Path
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line; errors for bad JSON or non-objects.

    ``text`` is the file's text, or its lines one at a time (a streamed file).
    """
    lines = _split_lines(text) if isinstance(text, str) else text
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except RecursionError:
            raise DatasetError(
                f"lists/objects nest too deep to read (the limit is {MAX_FIELD_DEPTH} levels):"
                " flatten the record",
                path=path,
                line=lineno,
            ) from None
        except json.JSONDecodeError as exc:
            raise DatasetError(
                # json's "Unterminated string starting at" already ends with "at".
                f"malformed JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}",
                path=path,
                line=lineno,
            ) from None
        if not isinstance(record, dict):
            raise DatasetError(
                f"expected a JSON object per line, got a JSON {_json_type(record)}",
                path=path,
                line=lineno,
            )
        yield lineno, record


def _split_lines(text: str) -> Iterator[str]:
    """``text.split("\\n")`` one line at a time (no list of every line of a large file)."""
    start = 0
    while (end := text.find("\n", start)) >= 0:
        yield text[start:end]
        start = end + 1
    yield text[start:]


def _json_type(value: Any) -> str:
    names = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def load_jsonl(
    path: str | Path,
    *,
    mapping: RecordMapping | None = None,
    name: str | None = None,
    id_prefix: str | None = None,
) -> Dataset:
    """One JSON object per line; blank lines are skipped.

    The file is read as a stream, a line at a time: a large file never sits in
    memory as text, and its samples go to columnar memory as they are checked
    (see :class:`~shieldbench.datasets._records.SampleBuilder`).
    """
    builder = SampleBuilder(str(path), mapping or RecordMapping(), id_prefix=id_prefix)
    for lineno, record in jsonl_records(_file_lines(path), path):
        builder.add(record, line=lineno)
    return builder.build(name or f"jsonl:{path}")


def _csv_rows(text: str | Iterator[str], path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """``(start line, cells)`` for each non-blank CSV row, header included.

    ``text`` is the file's text, or its lines with their ends (a streamed file).
    """
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    lines = io.StringIO(text, newline="") if isinstance(text, str) else text
    reader = csv.reader(lines, strict=True)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise DatasetError(f"malformed CSV: {exc}", path=path, line=start) from None
        if row:
            yield start, row
        start = reader.line_num + 1


def load_csv(
    path: str | Path,
    *,
    mapping: RecordMapping | None = None,
    name: str | None = None,
    id_prefix: str | None = None,
) -> Dataset:
    """A CSV file with a header row; empty cells are missing values.

    Read as a stream, a line at a time, like :func:`load_jsonl`.
    """
    builder = SampleBuilder(str(path), mapping or RecordMapping(), id_prefix=id_prefix)
    rows = _csv_rows(_file_lines(path, keepends=True), path)
    _, header = next(rows)
    header = [h.strip() for h in header]
    seen: set[str] = set()
    for h in header:
        if h in seen or not h:
            what = "an empty" if not h else f"a duplicate {h!r}"
            raise DatasetError(f"the header has {what} column name", path=path, line=1, field=h)
        seen.add(h)
    _check_columns(header, builder.mapping, path, line=1)
    text_col = _text_col(header, builder.mapping)
    for lineno, row in rows:
        if len(row) != len(header):
            raise DatasetError(
                f"expected {len(header)} columns (as in the header), got {len(row)}",
                path=path,
                line=lineno,
            )
        record = {
            h: None if cell == "" and h != text_col else cell
            for h, cell in zip(header, row, strict=True)
        }
        builder.add(record, line=lineno)
    return builder.build(name or f"csv:{path}")


def _text_col(columns: list[str], mapping: RecordMapping) -> str:
    if mapping.columns.text is not None:
        return mapping.columns.text
    return "text" if "text" in columns or "prompt" not in columns else "prompt"


def _check_columns(
    columns: list[str], mapping: RecordMapping, path: str | Path, *, line: int | None
) -> None:
    """Fail once, up front, when a table lacks the text or label column."""
    available = ", ".join(columns)
    text_col = _text_col(columns, mapping)
    if text_col not in columns:
        raise DatasetError(
            f"no column {text_col!r} (columns: {available}); map yours with text=COLUMN",
            path=path,
            line=line,
            field=text_col,
        )
    if mapping.labels.fixed is None and mapping.columns.label not in columns:
        raise DatasetError(
            f"no column {mapping.columns.label!r} (columns: {available}); map yours with"
            " label=COLUMN, or give every row one label with fixed_label=attack|benign",
            path=path,
            line=line,
            field=mapping.columns.label,
        )


def rows_to_dataset(
    rows: Iterable[dict[str, Any]],
    columns: list[str],
    *,
    path: str,
    mapping: RecordMapping,
    name: str,
    id_prefix: str | None = None,
) -> Dataset:
    """Shared by the table loaders (parquet, hf-disk): line = 1-based row number.

    ``rows`` is consumed as a stream (a generator reading a batch at a time)."""
    _check_columns(columns, mapping, path, line=None)
    builder = SampleBuilder(path, mapping, id_prefix=id_prefix)
    for index, row in enumerate(rows, start=1):
        builder.add(row, line=index)
    return builder.build(name)


def load_parquet(
    path: str | Path,
    *,
    mapping: RecordMapping | None = None,
    name: str | None = None,
    id_prefix: str | None = None,
) -> Dataset:
    """A parquet table (read with pyarrow, a batch of rows at a time); errors name the
    1-based row as the line."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.is_file():
        raise DatasetError(
            "file not found; check the path" if not p.exists() else "not a file", path=p
        )
    try:
        parquet = pq.ParquetFile(p)
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"not a readable parquet file: {exc}", path=p) from None
    if parquet.metadata.num_rows == 0:
        raise DatasetError("the table has no rows", path=p)
    return rows_to_dataset(
        _parquet_rows(parquet, p),
        list(parquet.schema_arrow.names),
        path=str(p),
        mapping=mapping or RecordMapping(),
        name=name or f"parquet:{path}",
        id_prefix=id_prefix,
    )


def _parquet_rows(parquet: Any, path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a Parquet file, read a row group's batch at a time."""
    import pyarrow as pa

    try:
        for batch in parquet.iter_batches(batch_size=CHUNK):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise DatasetError(f"not a readable parquet file: {exc}", path=path) from None


def load_pint(
    path: str | Path,
    *,
    mapping: RecordMapping | None = None,
    name: str | None = None,
    id_prefix: str | None = None,
) -> Dataset:
    """The PINT benchmark YAML format: a list of ``{text, category, label: bool}``."""
    import yaml  # on first use: only this loader reads YAML

    text = read_utf8(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DatasetError(
            f"malformed YAML: {exc.problem or exc}",
            path=path,
            line=None if mark is None else mark.line + 1,
        ) from None
    except yaml.YAMLError as exc:
        raise DatasetError(f"malformed YAML: {exc}", path=path) from None
    if root is None:
        raise DatasetError("the file is empty", path=path)
    if not isinstance(root, yaml.SequenceNode):
        raise DatasetError(
            "expected a YAML list of {text, category, label} items at the top level",
            path=path,
            line=root.start_mark.line + 1,
        )
    builder = SampleBuilder(str(path), mapping or RecordMapping(), id_prefix=id_prefix)
    loader = yaml.SafeLoader("")
    try:
        for node in root.value:
            line = node.start_mark.line + 1
            try:
                item = loader.construct_document(node)
            except yaml.YAMLError as exc:
                raise DatasetError(f"malformed YAML item: {exc}", path=path, line=line) from None
            if not isinstance(item, Mapping):
                raise DatasetError(
                    f"expected a mapping with text, category, label; got {type(item).__name__}",
                    path=path,
                    line=line,
                )
            builder.add(item, line=line)
    finally:
        loader.dispose()
    return builder.build(name or f"pint:{path}")


def _file_factory(loader: Any) -> Any:
    def factory(spec: Spec) -> Dataset:
        spec.check_options(MAPPING_OPTIONS)
        path = spec.require_arg("PATH")
        result: Dataset = loader(path, mapping=RecordMapping.from_spec(spec), name=spec.text)
        return result

    return factory


datasets.register(
    "jsonl",
    description="JSON Lines file, one object per line.",
    usage="jsonl:PATH | jsonl(PATH, text=FIELD, label=FIELD, attack=V|V, benign=V)",
)(_file_factory(load_jsonl))
datasets.register(
    "csv",
    description="CSV file with a header row.",
    usage="csv:PATH | csv(PATH, text=COLUMN, label=COLUMN, attack=V|V, benign=V)",
)(_file_factory(load_csv))
datasets.register(
    "parquet",
    description="Parquet table (read with pyarrow); errors name the row.",
    usage="parquet:PATH | parquet(PATH, text=COLUMN, label=COLUMN, attack=V, benign=V)",
)(_file_factory(load_parquet))
datasets.register(
    "pint",
    description="PINT benchmark YAML: a list of {text, category, label: bool}.",
    usage="pint:PATH.yaml",
)(_file_factory(load_pint))
