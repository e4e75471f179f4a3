"""A run's samples as one compact JSON document, stored once per distinct list.

Every run over the same samples shares the document (keyed by its sha256); reading
it back rebuilds the samples field for field, metadata and messages included.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from itertools import islice

from shieldbench.types import Sample

__all__ = ["read_samples", "sample_digest", "sample_document"]


def sample_document(samples: Sequence[Sample]) -> bytes:
    """The samples as one JSON array of field lists, UTF-8.

    Encoded a chunk of samples at a time into one buffer (the bytes are those of
    ``json.dumps`` over the whole list), so a large run's samples are never all
    field lists at once.
    """
    out = io.BytesIO()
    out.write(b"[")
    first = True
    stream = iter(samples)
    while block := list(islice(stream, _ENCODE_CHUNK)):
        records = [
            [
                s.id,
                s.text,
                s.label,
                s.category,
                s.subcategory,
                s.severity,
                s.tier,
                s.source,
                s.metadata or None,
                None if s.messages is None else [dict(m) for m in s.messages],
            ]
            for s in block
        ]
        text = json.dumps(records, ensure_ascii=False, separators=(",", ":"), default=dict)
        if not first:
            out.write(b",")
        out.write(text[1:-1].encode("utf-8", "surrogatepass"))
        first = False
    out.write(b"]")
    return out.getvalue()


_ENCODE_CHUNK = 16_384


def sample_digest(samples: Sequence[Sample]) -> str:
    """Hex sha256 over every field of the samples, metadata included, in order."""
    return hashlib.sha256(sample_document(samples)).hexdigest()


def read_samples(data: bytes) -> tuple[Sample, ...]:
    records = json.loads(data.decode("utf-8", "surrogatepass"))
    return tuple(
        Sample(
            id=r[0],
            text=r[1],
            label=r[2],
            category=r[3],
            subcategory=r[4],
            severity=r[5],
            tier=r[6],
            source=r[7],
            metadata=r[8] or {},
            messages=r[9] if len(r) > 9 else None,
        )
        for r in records
    )
