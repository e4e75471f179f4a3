"""Run files: the one owner of run-file I/O, and the one codec per record every format uses.

Saving and loading (:func:`save_run` / :func:`load_run`, also importable from
:mod:`shieldbench.runio`): a JSON run file, or a Parquet run file for a path ending
in ``.parquet`` (:func:`save_run_parquet`, written and read a row group at a time).
The records of large datasets and runs are columnar views
(:class:`ColumnarRows`): :class:`ParquetRows` reads a Parquet file (a run file, or
the spill file a :class:`ColumnBuilder` writes) a row group at a time, and
:class:`ArrowRows` reads an Arrow table in memory.

A :class:`~shieldbench.types.Run` is written three ways: a JSON run file
(:mod:`shieldbench.runio`), a Parquet run file (one row per sample and outcome) and
the engine's checkpoint (a JSONL file of outcomes). All three go through this
package: each record's ``to_dict`` / ``from_dict`` form (read with
:func:`decode_record`, whose errors name the file, the record and the field), the
run header's fields (:data:`RUN_FIELDS`, :func:`run_header`,
:func:`run_from_header`) and the columns derived from the records
(:data:`SAMPLE_COLUMNS`, :data:`OUTCOME_COLUMNS`). Adding a field to a record is
one change, in the record (or one entry in :data:`RUN_FIELDS` for a Run field).

Example:
    >>> from shieldbench.types import Sample
    >>> cols = encode_columns([Sample("a", "hi", "benign", metadata={"k": [1]})], SAMPLE_COLUMNS)
    >>> cols["metadata"], cols["messages"]
    (['{"k": [1]}'], [None])
    >>> decode_columns(Sample, SAMPLE_COLUMNS, cols, where="demo")[0].metadata["k"]
    [1]
"""

from shieldbench.runfiles._base import CHUNK, ColumnarRows
from shieldbench.runfiles._header import (
    RECORD_FIELDS,
    RUN_FIELDS,
    RUN_KIND,
    RUN_SCHEMA_VERSION,
    FieldCodec,
    check_kind,
    decode_fields,
    decode_record,
    decode_records,
    encode_fields,
    plain,
    run_from_header,
    run_header,
)
from shieldbench.runfiles._json import load_run, run_from_dict, run_to_dict, save_run
from shieldbench.runfiles._parquet import ROW_GROUP, load_run_parquet, save_run_parquet
from shieldbench.runfiles._rows import (
    OUTCOME_FIELDS,
    SAMPLE_FIELDS,
    ArrowRows,
    ColumnBuilder,
    outcome_columns,
    outcomes_from,
    sample_columns,
    samples_from,
)
from shieldbench.runfiles._spill import ParquetRows, ParquetSource
from shieldbench.runfiles._table import (
    OUTCOME_COLUMNS,
    SAMPLE_COLUMNS,
    Column,
    Columns,
    arrow_type,
    decode_columns,
    encode_columns,
)

__all__ = [
    "CHUNK",
    "OUTCOME_COLUMNS",
    "OUTCOME_FIELDS",
    "RECORD_FIELDS",
    "ROW_GROUP",
    "RUN_FIELDS",
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "SAMPLE_COLUMNS",
    "SAMPLE_FIELDS",
    "ArrowRows",
    "Column",
    "ColumnBuilder",
    "ColumnarRows",
    "Columns",
    "FieldCodec",
    "ParquetRows",
    "ParquetSource",
    "arrow_type",
    "check_kind",
    "decode_columns",
    "decode_fields",
    "decode_record",
    "decode_records",
    "encode_columns",
    "encode_fields",
    "load_run",
    "load_run_parquet",
    "outcome_columns",
    "outcomes_from",
    "plain",
    "run_from_dict",
    "run_from_header",
    "run_header",
    "run_to_dict",
    "sample_columns",
    "samples_from",
    "save_run",
    "save_run_parquet",
]
