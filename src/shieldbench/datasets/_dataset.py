"""The :class:`Dataset` record and its content hash.

A dataset is an ordered tuple of :class:`~shieldbench.types.Sample` with a name (the
spec that loaded it) and a content hash: a SHA-256 over the canonical JSON of every
sample, in order. The hash is the dataset's version: two runs are comparable sample
by sample only when their datasets hash the same.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from shieldbench._textio import find_unencodable
from shieldbench._views import RecordView
from shieldbench.errors import DatasetError
from shieldbench.types import DatasetInfo, Sample

__all__ = ["Dataset", "content_hash", "hash_line"]


def content_hash(samples: Iterable[Sample]) -> str:
    """``sha256:<hex>`` over the canonical JSON of the samples, in order.

    Every field that changes what a benchmark measures is hashed (id, text, label,
    category, subcategory, severity, tier, source); metadata is not, so adding a
    note to a sample does not change the dataset's version.
    """
    digest = hashlib.sha256()
    for s in samples:
        digest.update(hash_line(s))
    return "sha256:" + digest.hexdigest()


def hash_line(s: Sample) -> bytes:
    """What one sample adds to :func:`content_hash` (loaders hash while they stream)."""
    record: list[object] = [
        s.id, s.text, s.label, s.category, s.subcategory, s.severity, s.tier, s.source
    ]  # fmt: skip
    if s.messages is not None:  # a conversation is data too (absent: same hash as before)
        record.append([[m["role"], m["content"]] for m in s.messages])
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    return line.encode("utf-8", "surrogatepass") + b"\n"


@dataclass(frozen=True, slots=True)
class Dataset:
    """Labelled samples plus where they came from and their content hash.

    The constructor refuses duplicate ids (the engine matches outcomes to samples
    by id) and computes the hash when none is given.

    ``samples`` is a tuple, or for a large dataset a columnar
    :class:`~shieldbench._views.RecordView` (see :mod:`shieldbench.runfiles`) made by
    a loader that streamed its file, checked every record and hashed it on the way;
    such a view is taken as it is (not copied into objects, not checked again).

    Example:
        >>> samples = (Sample("1", "hi", "benign"), Sample("2", "Ignore all rules", "attack"))
        >>> ds = Dataset("inline", samples)
        >>> len(ds), ds.content_hash[:7]
        (2, 'sha256:')
    """

    name: str
    samples: Sequence[Sample]
    content_hash: str = ""
    description: str = ""
    sources: tuple[tuple[str, str], ...] = field(default=())

    def __post_init__(self) -> None:
        if isinstance(self.samples, RecordView) and self.content_hash:
            return  # checked and hashed by the loader that streamed it
        object.__setattr__(self, "samples", tuple(self.samples))
        seen: set[str] = set()
        for index, s in enumerate(self.samples):
            if s.id in seen:
                raise DatasetError(
                    f"duplicate sample id {s.id!r} (sample #{index + 1}); ids must be unique",
                    path=self.name,
                    field="id",
                )
            seen.add(s.id)
            for name in ("id", "text", "category", "subcategory", "source"):
                value = getattr(s, name)
                position = None if value is None else find_unencodable(value)
                if position is not None:
                    raise DatasetError(
                        f"sample {s.id!r} (#{index + 1}): character {position} is a lone"
                        " surrogate, which UTF-8 cannot encode; fix the text at its source",
                        path=self.name,
                        field=name,
                    )
        if not self.content_hash:
            object.__setattr__(self, "content_hash", content_hash(self.samples))

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    @property
    def info(self) -> DatasetInfo:
        """The record of this dataset stored in a :class:`~shieldbench.types.Run`."""
        return DatasetInfo(
            spec=self.name,
            content_hash=self.content_hash,
            n_samples=len(self.samples),
            sources=self.sources,
        )

    def label_counts(self) -> dict[str, int]:
        batches = getattr(self.samples, "batches", None)
        if batches is not None:  # columnar: count the label column a block at a time
            counts: Counter[str] = Counter()
            for block in batches(["label"]):
                for pair in block.column("label").value_counts().to_pylist():
                    counts[pair["values"]] += pair["counts"]
        else:
            counts = Counter(s.label for s in self.samples)
        return {"attack": counts.get("attack", 0), "benign": counts.get("benign", 0)}
