"""Run files: the one codec per record that every format uses.

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
    "OUTCOME_COLUMNS",
    "RECORD_FIELDS",
    "RUN_FIELDS",
    "RUN_KIND",
    "RUN_SCHEMA_VERSION",
    "SAMPLE_COLUMNS",
    "Column",
    "Columns",
    "FieldCodec",
    "arrow_type",
    "check_kind",
    "decode_columns",
    "decode_fields",
    "decode_record",
    "decode_records",
    "encode_columns",
    "encode_fields",
    "plain",
    "run_from_header",
    "run_header",
]
