"""A run's samples, stored once per distinct list: one row per sample (``sample_rows``).

Every run over the same samples shares the set (keyed by its digest: the sha256 of
the list's compact JSON, ``[record,record,...]``, each record the sample's field
list). The records are encoded, hashed and inserted a block of samples at a time,
so a run of millions of samples never holds them all as text; reading back
rebuilds the samples field for field, metadata and messages included. A set stored
before revision 0005 is one JSON document (``sample_sets.data``) and reads as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shieldbench.store._models import SampleRow, SampleSetRow
from shieldbench.types import Sample

__all__ = [
    "load_records",
    "read_samples",
    "record_blocks",
    "sample_digest",
    "sample_document",
    "samples_from_records",
]

_ENCODE_CHUNK = 16_384
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=dict).encode


def _fields(s: Sample) -> list[Any]:
    return [
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


def record_blocks(
    samples: Sequence[Sample], mask: Callable[[str], str] | None = None
) -> Iterator[list[str]]:
    """The samples' records as JSON texts, :data:`_ENCODE_CHUNK` at a time (``mask``
    applied to each: the credentials a run must not store)."""
    stream = iter(samples)
    while block := list(islice(stream, _ENCODE_CHUNK)):
        texts = [_ENCODE(_fields(s)) for s in block]
        yield texts if mask is None else [mask(t) for t in texts]


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def sample_digest(samples: Sequence[Sample], mask: Callable[[str], str] | None = None) -> str:
    """Hex sha256 of :func:`sample_document`, computed a block at a time (the document is
    never built): every field of the samples, metadata included, in order."""
    digest = hashlib.sha256(b"[")
    first = True
    for block in record_blocks(samples, mask):
        if not first:
            digest.update(b",")
        digest.update(_bytes(",".join(block)))
        first = False
    digest.update(b"]")
    return digest.hexdigest()


def sample_document(samples: Sequence[Sample]) -> bytes:
    """The samples as one JSON array of field lists, UTF-8 (the bytes of ``json.dumps``
    over the whole list): what :func:`sample_digest` hashes, for small sets and tests."""
    return b"[" + b",".join(_bytes(",".join(b)) for b in record_blocks(samples)) + b"]"


def samples_from_records(records: Sequence[list[Any]]) -> tuple[Sample, ...]:
    """Samples from their stored field lists."""
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


def read_samples(data: bytes) -> tuple[Sample, ...]:
    """Samples from a set stored as one document (before revision 0005)."""
    return samples_from_records(json.loads(data.decode("utf-8", "surrogatepass")))


def load_records(session: Session, digest: str) -> list[list[Any]] | None:
    """The field lists of set ``digest`` in position order; ``None`` when it is not stored."""
    found = session.execute(
        select(SampleSetRow.n, SampleSetRow.data).where(SampleSetRow.digest == digest)
    ).first()
    if found is None:
        return None
    if found.data is not None:
        records: list[list[Any]] = json.loads(bytes(found.data).decode("utf-8", "surrogatepass"))
        return records
    query = select(SampleRow.record).where(SampleRow.digest == digest).order_by(SampleRow.position)
    out = [json.loads(text) for text in session.scalars(query.execution_options(yield_per=4096))]
    return out if len(out) == found.n else None
