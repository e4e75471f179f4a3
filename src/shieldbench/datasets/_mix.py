"""Dataset combinators: mixtures, label and field filters, heads and stratified samples.

Each combinator is a dataset spec whose positional arguments are dataset specs:

- ``mix(A, B, ...)`` -- the samples of every component, in order. A sample without
  a ``source`` gets the component's spec as its source (for per-source
  breakdowns); an id found in more than one component is prefixed with the
  component spec (``"jsonl:a.jsonl/17"``) in each of them. ``Dataset.sources``
  records ``(spec, content hash)`` of each component.
- ``attacks(A)`` / ``benign(A)`` -- only the samples with that label.
- ``filter(A, label=attack, category=jailbreak|extraction, ...)`` -- samples whose
  fields match every given option; ``|`` separates alternatives. Options:
  ``label``, ``category``, ``subcategory``, ``severity``, ``tier``, ``source``,
  ``language`` (from metadata).
- ``head(A, n=100)`` -- the first ``n`` samples.
- ``sample(A, n=100, seed=0)`` -- ``n`` samples drawn without replacement,
  stratified with proportional allocation (largest remainders) first across
  labels, then across the categories of each label, in their original order;
  the same seed gives the same sample.

A combinator that keeps no sample is an error (a benchmark on nothing measures
nothing). Derived datasets record their input as ``sources``.

Example:
    >>> from shieldbench.types import Sample
    >>> ds = Dataset("d", tuple(Sample(str(i), f"t{i}", "attack" if i % 3 else "benign")
    ...                         for i in range(30)))
    >>> sub = sample_dataset(ds, 9, seed=1)
    >>> len(sub), sub.label_counts()
    (9, {'attack': 6, 'benign': 3})
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from shieldbench.datasets._dataset import Dataset
from shieldbench.errors import ConfigError, DatasetError, SpecError
from shieldbench.registry import datasets
from shieldbench.spec import Spec
from shieldbench.types import LABELS, Sample

__all__ = ["filter_dataset", "head_dataset", "mix_datasets", "sample_dataset"]

FILTER_FIELDS = ("label", "category", "subcategory", "severity", "tier", "source", "language")


def _load(spec: str) -> Dataset:
    obj = datasets.create(spec)
    if not isinstance(obj, Dataset):
        raise SpecError(f"{spec!r} built a {type(obj).__name__}, not a Dataset")
    return obj


def _provenance(ds: Dataset) -> tuple[tuple[str, str], ...]:
    return ((ds.name, ds.content_hash),)


def _derived(name: str, samples: Sequence[Sample], inputs: Sequence[Dataset]) -> Dataset:
    if not samples:
        raise DatasetError("no samples left; loosen the filter or check the input", path=name)
    sources = tuple(p for ds in inputs for p in _provenance(ds))
    return Dataset(name, tuple(samples), sources=sources)


def mix_datasets(components: Sequence[Dataset], *, name: str | None = None) -> Dataset:
    """Concatenate datasets, keeping each sample's source (see the module docstring)."""
    if not components:
        raise ConfigError("mix needs at least one dataset")
    names = [c.name for c in components]
    repeated = sorted(n for n, k in Counter(names).items() if k > 1)
    if repeated:
        raise ConfigError(f"dataset {repeated[0]!r} given twice in one mix")
    id_counts = Counter(s.id for c in components for s in c)
    samples = []
    for comp in components:
        for s in comp:
            new_id = f"{comp.name}/{s.id}" if id_counts[s.id] > 1 else s.id
            samples.append(replace(s, id=new_id, source=s.source or comp.name))
    return _derived(name or "mix(" + ", ".join(names) + ")", samples, components)


def _matcher(options: Mapping[str, str]) -> Callable[[Sample], bool]:
    unknown = sorted(set(options) - set(FILTER_FIELDS))
    if unknown:
        raise ConfigError(
            f"cannot filter on {', '.join(unknown)}; filter fields: {', '.join(FILTER_FIELDS)}"
        )
    wanted = {k: {v.strip() for v in raw.split("|")} for k, raw in options.items()}
    bad_labels = wanted.get("label", set()) - set(LABELS)
    if bad_labels:
        raise ConfigError(f"label must be attack or benign, got {', '.join(sorted(bad_labels))}")

    def value(s: Sample, key: str) -> str | None:
        if key == "language":
            lang = s.metadata.get("language")
            return None if lang is None else str(lang)
        result: str | None = getattr(s, key)
        return result

    return lambda s: all(value(s, k) in allowed for k, allowed in wanted.items())


def filter_dataset(ds: Dataset, *, name: str | None = None, **options: str) -> Dataset:
    """The samples of ``ds`` matching every ``field=value|value`` option."""
    keep = _matcher(options)
    opts = ", ".join(f"{k}={v}" for k, v in options.items())
    return _derived(name or f"filter({ds.name}, {opts})", [s for s in ds if keep(s)], [ds])


def head_dataset(ds: Dataset, n: int, *, name: str | None = None) -> Dataset:
    """The first ``n`` samples (all of them when there are fewer)."""
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    return _derived(name or f"head({ds.name}, n={n})", ds.samples[:n], [ds])


def _allocate(sizes: Mapping[Any, int], take: int) -> dict[Any, int]:
    """Split ``take`` over groups in proportion to their sizes (largest remainders;
    ties go to the group that sorts first)."""
    total = sum(sizes.values())
    keys = sorted(sizes)
    quotas = {k: take * sizes[k] / total for k in keys} if total else {}
    alloc = {k: int(q) for k, q in quotas.items()}
    ranked = sorted(range(len(keys)), key=lambda i: (alloc[keys[i]] - quotas[keys[i]], i))
    for i in ranked[: take - sum(alloc.values())]:
        alloc[keys[i]] += 1
    return alloc


def sample_dataset(
    ds: Dataset,
    n: int,
    *,
    seed: int = 0,
    label: str | None = None,
    name: str | None = None,
) -> Dataset:
    """``n`` samples, stratified by label then category, seeded; all when ``n >= len``."""
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    pool = ds.samples
    if label is not None:
        if label not in LABELS:
            raise ConfigError(f"label must be attack or benign, got {label!r}")
        pool = tuple(s for s in pool if s.label == label)
    strata: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, s in enumerate(pool):
        strata[(s.label, s.category)].append(index)
    per_label = Counter(s.label for s in pool)
    label_alloc = _allocate(dict(per_label), min(n, len(pool)))
    alloc: dict[tuple[str, str], int] = {}
    for lab, quota in label_alloc.items():
        sizes = {k: len(v) for k, v in strata.items() if k[0] == lab}
        alloc.update(_allocate(sizes, quota))
    keys = sorted(strata)
    rng = random.Random(seed)
    chosen = sorted(i for k in keys for i in rng.sample(strata[k], alloc[k]))
    label_part = f", label={label}" if label else ""
    default = f"sample({ds.name}, n={n}, seed={seed}{label_part})"
    return _derived(name or default, [pool[i] for i in chosen], [ds])


def _one_input(spec: Spec) -> Dataset:
    if len(spec.args) != 1:
        raise SpecError(
            f"{spec.text!r}: {spec.name} takes one dataset spec, e.g. {spec.name}(builtin:core)"
        )
    return _load(spec.args[0])


def _positive(spec: Spec, key: str, default: int) -> int:
    value = spec.int_option(key, default)
    if value is None or value < 1:
        raise SpecError(f"{spec.text!r}: {key} must be a positive integer, got {value}")
    return value


@datasets.register(
    "mix",
    description="Several datasets in one run; each sample keeps its source (the component"
    " spec); colliding ids are prefixed with it.",
    usage="mix(SPEC, SPEC, ...)",
    example="mix(attacks(builtin:core), benign(builtin:core))",
)
def _mix_factory(spec: Spec) -> Dataset:
    spec.check_options(set())
    if not spec.args:
        raise SpecError(
            f"{spec.text!r}: mix needs dataset specs, e.g. mix(builtin:core, jsonl:x.jsonl)"
        )
    return mix_datasets([_load(a) for a in spec.args], name=spec.text)


@datasets.register(
    "attacks",
    description="Only the attack samples of a dataset.",
    usage="attacks(SPEC)",
    example="attacks(builtin:core)",
)
def _attacks_factory(spec: Spec) -> Dataset:
    spec.check_options(set())
    return filter_dataset(_one_input(spec), name=spec.text, label="attack")


@datasets.register(
    "benign",
    description="Only the benign samples of a dataset.",
    usage="benign(SPEC)",
    example="benign(builtin:core)",
)
def _benign_factory(spec: Spec) -> Dataset:
    spec.check_options(set())
    return filter_dataset(_one_input(spec), name=spec.text, label="benign")


@datasets.register(
    "filter",
    description="Samples matching every field=value|value option (fields: "
    + ", ".join(FILTER_FIELDS)
    + ").",
    usage="filter(SPEC, label=attack, category=A|B, tier=..., language=...)",
    example="filter(builtin:core, label=benign)",
)
def _filter_factory(spec: Spec) -> Dataset:
    spec.check_options(set(FILTER_FIELDS))
    if not spec.kwargs:
        raise SpecError(f"{spec.text!r}: filter needs at least one field=value option")
    return filter_dataset(_one_input(spec), name=spec.text, **dict(spec.kwargs))


@datasets.register(
    "head",
    description="The first n samples of a dataset (default 100).",
    usage="head(SPEC, n=100)",
    example="head(builtin:core, n=25)",
)
def _head_factory(spec: Spec) -> Dataset:
    spec.check_options({"n"})
    return head_dataset(_one_input(spec), _positive(spec, "n", 100), name=spec.text)


@datasets.register(
    "sample",
    description="A seeded random sample stratified by label and category (default n=100, seed=0).",
    usage="sample(SPEC, n=100, seed=0, label=attack|benign)",
    example="sample(builtin:core, n=40, seed=1)",
)
def _sample_factory(spec: Spec) -> Dataset:
    spec.check_options({"n", "seed", "label"})
    return sample_dataset(
        _one_input(spec),
        _positive(spec, "n", 100),
        seed=spec.int_option("seed", 0) or 0,
        label=spec.str_option("label"),
        name=spec.text,
    )
