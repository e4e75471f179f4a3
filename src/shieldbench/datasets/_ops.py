"""Dataset operations: summaries, sample-size checks, train/test overlap, file loading.

Every result is a frozen dataclass with ``to_dict()`` so the CLI, reports and
other programs read the same numbers.

Sample-size check: a rate measured on ``n`` samples has a 95% confidence interval
whose half-width (the margin of error) shrinks like ``1/sqrt(n)``. For a wanted
margin, :func:`sample_size_warnings` asks
:func:`shieldbench.metrics.required_sample_size` (Wilson interval, worst-case
rate 0.5 unless told otherwise) how many samples each label and each category
needs, and warns for every one that has fewer. The block rate of a category is
measured on its attacks and its false-positive rate on its benign samples, so a
category is checked per label.

Example:
    >>> from shieldbench.types import Sample
    >>> ds = Dataset("d", tuple(Sample(str(i), f"text {i}", "attack", "jailbreak")
    ...                         for i in range(40)))
    >>> for w in sample_size_warnings(ds, margin=0.1):
    ...     print(w.message)
    label 'attack': 40 samples; a ±10% margin at 95% confidence needs 93 (53 more)
    no benign samples: the false positive rate cannot be measured
    category 'jailbreak' (attack): 40 samples; a ±10% margin at 95% confidence needs 93 (53 more)
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shieldbench.datasets._dataset import Dataset
from shieldbench.datasets._paths import FILE_LOADERS
from shieldbench.datasets._similarity import near_duplicates, normalize_text
from shieldbench.errors import ConfigError, DatasetError
from shieldbench.registry import datasets
from shieldbench.spec import Spec
from shieldbench.types import LABELS, Sample

__all__ = [
    "SUMMARY_FIELDS",
    "DatasetOverlap",
    "DatasetSummary",
    "LengthStats",
    "OverlapPair",
    "SampleSizeWarning",
    "dataset_overlap",
    "describe_dataset",
    "load_file",
    "sample_size_note",
    "sample_size_warnings",
]

SUMMARY_FIELDS = ("label", "category", "subcategory", "tier", "severity", "language", "source")
_NONE = "(none)"


@dataclass(frozen=True, slots=True)
class SampleSizeWarning:
    """Too few samples for the wanted margin: ``n`` samples where ``required`` are needed.

    ``scope`` is ``"label"`` (all samples of one label) or ``"category"`` (one
    category's samples of ``label``).
    """

    scope: Literal["label", "category"]
    name: str
    label: str
    n: int
    required: int
    margin: float
    confidence: float

    @property
    def shortfall(self) -> int:
        return max(0, self.required - self.n)

    @property
    def message(self) -> str:
        if self.scope == "label" and self.n == 0:
            what = "attack success rate" if self.label == "attack" else "false positive rate"
            return f"no {self.label} samples: the {what} cannot be measured"
        where = f"label {self.name!r}" if self.scope == "label" else f"category {self.name!r}"
        if self.scope == "category":
            where += f" ({self.label})"
        return (
            f"{where}: {self.n} samples; a ±{self.margin:.0%} margin at {self.confidence:.0%}"
            f" confidence needs {self.required} ({self.shortfall} more)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "name": self.name,
            "label": self.label,
            "n": self.n,
            "required": self.required,
            "margin": self.margin,
            "confidence": self.confidence,
            "message": self.message,
        }


def sample_size_warnings(
    samples: Iterable[Sample],
    *,
    margin: float = 0.1,
    confidence: float = 0.95,
    rate: float = 0.5,
) -> tuple[SampleSizeWarning, ...]:
    """Warnings for each label and (label, category) with fewer samples than needed.

    ``rate`` is the planned rate (0.5, the worst case, needs the most samples).
    A label with no samples at all is always reported. Order: labels first
    (attack, benign), then categories by label and name.
    """
    # Imported on use: the metrics package (numpy) is not needed to load a dataset.
    from shieldbench.metrics import required_sample_size

    required = required_sample_size(margin=margin, rate=rate, confidence=confidence)
    by_label: Counter[str] = Counter()
    by_category: Counter[tuple[str, str]] = Counter()
    batches = getattr(samples, "batches", None)
    if batches is not None:  # columnar: count two columns a block at a time, no records
        for block in batches(["label", "category"]):
            labels, categories = block.column("label"), block.column("category")
            by_category.update(zip(labels.to_pylist(), categories.to_pylist(), strict=True))
        for (label, _), n in by_category.items():
            by_label[label] += n
    else:
        for s in samples:
            by_label[s.label] += 1
            by_category[(s.label, s.category)] += 1
    out: list[SampleSizeWarning] = []
    for label in LABELS:
        n = by_label.get(label, 0)
        if n < required:
            out.append(SampleSizeWarning("label", label, label, n, required, margin, confidence))
    for (label, category), n in sorted(by_category.items()):
        if n < required:
            out.append(
                SampleSizeWarning("category", category, label, n, required, margin, confidence)
            )
    return tuple(out)


def sample_size_note(warnings: Sequence[SampleSizeWarning]) -> str | None:
    """The warnings as one sentence (``None`` when there are none): what the data supports.

    The one sample-size note a command prints per dataset (``run``, ``datasets
    validate``) and the report's sample-size card repeats, instead of a line per
    label and per category:

    >>> from shieldbench.types import Sample
    >>> data = [Sample(str(i), "t", "attack", "jb" if i % 2 else "leak") for i in range(30)]
    >>> print(sample_size_note(sample_size_warnings(data, margin=0.1)))
    ... # doctest: +NORMALIZE_WHITESPACE
    30 attack and 0 benign samples (a ±10% interval at 95% confidence needs 93 of each;
    no benign samples: the false positive rate cannot be measured); 2 categories below 93:
    jb (15), leak (15)
    """
    if not warnings:
        return None
    first = warnings[0]
    labels = {w.label: w for w in warnings if w.scope == "label"}
    cats = [w for w in warnings if w.scope == "category"]
    counts = " and ".join(f"{w.n} {w.label}" for w in labels.values())
    absent = [w.message for w in labels.values() if w.n == 0]
    head = (
        f"{counts} samples (a ±{first.margin:.0%} interval at {first.confidence:.0%} confidence"
        f" needs {first.required} of each" + "".join(f"; {m}" for m in absent) + ")"
    )
    if not labels:
        head = f"a ±{first.margin:.0%} interval at {first.confidence:.0%} confidence needs"
        head += f" {first.required} samples per category"
    if not cats:
        return head
    shown = ", ".join(f"{w.name} ({w.n})" for w in cats[:_NOTE_CATEGORIES])
    more = f" and {len(cats) - _NOTE_CATEGORIES} more" if len(cats) > _NOTE_CATEGORIES else ""
    return f"{head}; {len(cats)} categories below {first.required}: {shown}{more}"


_NOTE_CATEGORIES = 6


@dataclass(frozen=True, slots=True)
class LengthStats:
    """Text length in characters: min, median, 95th percentile (linear), max."""

    min: int
    median: float
    p95: float
    max: int

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "median": self.median, "p95": self.p95, "max": self.max}


@dataclass(frozen=True, slots=True)
class DatasetSummary:
    """What :func:`describe_dataset` found: counts per field, lengths, duplicates, warnings.

    ``counts[field]`` is a tuple of ``(value, count)``, most frequent first;
    missing values count as ``"(none)"``. ``n_duplicate_texts`` counts samples
    whose normalised text equals an earlier sample's.
    """

    name: str
    content_hash: str
    n_samples: int
    counts: Mapping[str, tuple[tuple[str, int], ...]]
    lengths: LengthStats
    n_duplicate_texts: int
    warnings: tuple[SampleSizeWarning, ...]
    sources: tuple[tuple[str, str], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "content_hash": self.content_hash,
            "n_samples": self.n_samples,
            "counts": {k: [list(p) for p in v] for k, v in self.counts.items()},
            "lengths": self.lengths.to_dict(),
            "n_duplicate_texts": self.n_duplicate_texts,
            "warnings": [w.to_dict() for w in self.warnings],
            "sources": [list(s) for s in self.sources],
        }


def _field_value(s: Sample, name: str) -> str:
    value = s.metadata.get("language") if name == "language" else getattr(s, name)
    return _NONE if value is None else str(value)


def describe_dataset(
    ds: Dataset, *, margin: float = 0.1, confidence: float = 0.95
) -> DatasetSummary:
    """Counts per label, category, subcategory, tier, severity, language and source,
    text lengths, exact duplicate texts, content hash and sample-size warnings."""
    counts = {
        name: tuple(Counter(_field_value(s, name) for s in ds).most_common())
        for name in SUMMARY_FIELDS
    }
    import numpy as np  # on use: loading a dataset does not need numpy

    lengths = np.array([len(s.text) for s in ds], dtype=float)
    stats = LengthStats(
        min=int(lengths.min()),
        median=float(statistics.median(lengths)),
        p95=float(np.percentile(lengths, 95)),
        max=int(lengths.max()),
    )
    seen: set[str] = set()
    duplicates = 0
    for s in ds:
        key = normalize_text(s.text)
        duplicates += key in seen
        seen.add(key)
    return DatasetSummary(
        name=ds.name,
        content_hash=ds.content_hash,
        n_samples=len(ds),
        counts=counts,
        lengths=stats,
        n_duplicate_texts=duplicates,
        warnings=sample_size_warnings(ds, margin=margin, confidence=confidence),
        sources=ds.sources,
    )


@dataclass(frozen=True, slots=True)
class OverlapPair:
    """One sample of A matching one of B: exact (same normalised text) or near."""

    id_a: str
    id_b: str
    similarity: float
    exact: bool
    label_a: str
    label_b: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id_a": self.id_a,
            "id_b": self.id_b,
            "similarity": self.similarity,
            "exact": self.exact,
            "label_a": self.label_a,
            "label_b": self.label_b,
        }


@dataclass(frozen=True, slots=True)
class DatasetOverlap:
    """Exact and near-duplicate overlap between two datasets (train/test leakage).

    ``n_a_overlapping`` counts samples of A with at least one match in B (and
    vice versa); ``n_label_conflicts`` counts matched pairs whose labels differ.
    When A and B hold the same content, pairs are taken within it (``i < j``).
    """

    name_a: str
    name_b: str
    n_a: int
    n_b: int
    threshold: float
    pairs: tuple[OverlapPair, ...]

    @property
    def n_exact_pairs(self) -> int:
        return sum(p.exact for p in self.pairs)

    @property
    def n_near_pairs(self) -> int:
        return sum(not p.exact for p in self.pairs)

    @property
    def n_a_overlapping(self) -> int:
        return len({p.id_a for p in self.pairs})

    @property
    def n_b_overlapping(self) -> int:
        return len({p.id_b for p in self.pairs})

    @property
    def n_label_conflicts(self) -> int:
        return sum(p.label_a != p.label_b for p in self.pairs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name_a": self.name_a,
            "name_b": self.name_b,
            "n_a": self.n_a,
            "n_b": self.n_b,
            "threshold": self.threshold,
            "n_exact_pairs": self.n_exact_pairs,
            "n_near_pairs": self.n_near_pairs,
            "n_a_overlapping": self.n_a_overlapping,
            "n_b_overlapping": self.n_b_overlapping,
            "n_label_conflicts": self.n_label_conflicts,
            "pairs": [p.to_dict() for p in self.pairs],
        }


def dataset_overlap(a: Dataset, b: Dataset, *, threshold: float = 0.8) -> DatasetOverlap:
    """Pairs of samples of ``a`` and ``b`` with shingle Jaccard >= ``threshold``.

    Exact means equal normalised text (see :func:`~shieldbench.datasets.normalize_text`).
    """
    same = a.content_hash == b.content_hash
    texts_a = [s.text for s in a]
    found = near_duplicates(texts_a, None if same else [s.text for s in b], threshold=threshold)
    pairs = []
    for i, j, sim in found:
        sa, sb = a.samples[i], b.samples[j]
        exact = normalize_text(sa.text) == normalize_text(sb.text)
        pairs.append(OverlapPair(sa.id, sb.id, sim, exact, sa.label, sb.label))
    return DatasetOverlap(a.name, b.name, len(a), len(b), threshold, tuple(pairs))


def load_file(path: str | Path, *, options: Mapping[str, str] | None = None) -> Dataset:
    """Load a data file with the loader its extension names (a folder: ``hf-disk``).

    ``options`` are the loader's mapping options (``{"text": "prompt"}``, ...).
    """
    p = Path(path)
    if p.is_dir():
        kind = "hf-disk"
    else:
        kind = FILE_LOADERS.get(p.suffix.lower(), "")
        if not kind:
            if not p.exists():
                raise DatasetError("file not found; check the path", path=p)
            known = ", ".join(sorted(FILE_LOADERS))
            raise ConfigError(f"{p}: unknown file type {p.suffix!r}; expected one of {known}")
    opts = dict(options or {})
    text = f"{kind}({p}" + "".join(f", {k}={v}" for k, v in opts.items()) + ")"
    result = datasets.create(Spec(name=kind, args=(str(p),), kwargs=opts, text=text))
    if not isinstance(result, Dataset):
        raise ConfigError(f"{kind} built a {type(result).__name__}, not a Dataset")
    return result
