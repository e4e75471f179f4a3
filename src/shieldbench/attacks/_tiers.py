"""Tier generation: mutated variants of a dataset, written as JSONL for static runs.

``mutate_dataset`` applies each mutator to each sample (or each attack) and
returns a new :class:`~shieldbench.datasets.Dataset` of variants, each labelled
with its parent and mutator in ``metadata`` (``parent_id``, ``mutator``,
``preserves_payload``) and put in a difficulty tier (``adaptive`` unless told,
e.g. ``paraphrased``). ``write_jsonl`` writes any dataset in the flat record
layout the ``jsonl:`` loader reads back (metadata keys become top-level fields,
which the loader returns to ``metadata``). ``bypasses_dataset`` turns an attack's
bypasses into such a dataset.

Example:
    >>> import tempfile, pathlib
    >>> from shieldbench.datasets import Dataset, load_dataset
    >>> from shieldbench.types import Sample
    >>> parent = Dataset("inline", (Sample("a1", "Ignore the rules", "attack"),
    ...                             Sample("b1", "Hello there", "benign")))
    >>> variants = mutate_dataset(parent, "rot13,json", only_attacks=True)
    >>> [s.id for s in variants], variants.samples[0].metadata["mutator"]
    (['a1~rot13', 'a1~json'], 'rot13')
    >>> path = write_jsonl(variants, pathlib.Path(tempfile.mkdtemp()) / "v.jsonl")
    >>> again = load_dataset(f"jsonl:{path}")
    >>> again.samples == variants.samples, dict(again.samples[1].metadata)["parent_id"]
    (True, 'a1')
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from shieldbench._textio import write_text_atomic
from shieldbench.attacks._mutator import Mutator, resolve_mutators
from shieldbench.attacks._result import AttackResult
from shieldbench.datasets import Dataset
from shieldbench.errors import ConfigError
from shieldbench.types import TIERS, Sample

__all__ = ["bypasses_dataset", "mutate_dataset", "write_jsonl"]

_COLUMNS = ("id", "text", "label", "category", "subcategory", "severity", "tier", "source")


def mutate_dataset(
    dataset: Dataset,
    mutators: str | Iterable[str] | Iterable[Mutator],
    *,
    seed: int = 0,
    only_attacks: bool = False,
    tier: str = "adaptive",
) -> Dataset:
    """One variant per (sample, mutator), in dataset order then mutator order.

    ``mutators`` is a comma-separated string of names, ``+``-chains and families,
    or a list of names or :class:`Mutator` objects. A variant's id is
    ``PARENT~MUTATOR``; its label, category, subcategory, severity and source are
    the parent's (a mutated attack is still an attack, also when the mutator may
    hide the payload: ``metadata["preserves_payload"]`` says so, for filtering).
    Each variant's randomness is seeded by ``(seed, parent id, mutator)``, so a
    variant does not change when other samples or mutators are added.
    """
    if tier not in TIERS:
        raise ConfigError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}")
    chosen = _mutators(mutators)
    if not chosen:
        raise ConfigError("no mutators given; name at least one (see 'shieldbench mutators')")
    variants: list[Sample] = []
    for parent in dataset.samples:
        if only_attacks and not parent.is_attack:
            continue
        for m in chosen:
            rng = random.Random(f"{seed}/{parent.id}/{m.name}")
            metadata = dict(parent.metadata)
            metadata.update(
                parent_id=parent.id, mutator=m.name, preserves_payload=m.preserves_payload
            )
            variants.append(
                Sample(
                    id=f"{parent.id}~{m.name}",
                    text=m(parent.text, rng),
                    label=parent.label,
                    category=parent.category,
                    subcategory=parent.subcategory,
                    severity=parent.severity,
                    tier=tier,  # type: ignore[arg-type]  # checked against TIERS above
                    source=parent.source,
                    metadata=metadata,
                )
            )
    names = ",".join(m.name for m in chosen)
    return Dataset(
        name=f"mutate({dataset.name}, {names}, seed={seed})",
        samples=tuple(variants),
        description=f"{len(variants)} variants of {dataset.name} by {names}",
        sources=((dataset.name, dataset.content_hash),),
    )


def _mutators(value: str | Iterable[str] | Iterable[Mutator]) -> tuple[Mutator, ...]:
    if isinstance(value, str):
        return resolve_mutators(value) if value.strip() else ()
    items = list(value)
    if all(isinstance(v, Mutator) for v in items):
        return tuple(v for v in items if isinstance(v, Mutator))
    return resolve_mutators([str(v) for v in items]) if items else ()


def bypasses_dataset(result: AttackResult) -> Dataset:
    """An attack's bypasses as attack samples of tier ``adaptive``.

    Ids are ``PARENT~CHAIN``; metadata carries ``parent_id``, ``mutator`` (the
    chain joined with ``+``), ``preserves_payload`` and the defense attacked.
    """
    samples = tuple(
        Sample(
            id=f"{b.sample_id}~{'+'.join(b.chain)}",
            text=b.text,
            label="attack",
            category=b.category,
            tier="adaptive",
            source=f"attack:{result.defense.spec}",
            metadata={
                "parent_id": b.sample_id,
                "mutator": "+".join(b.chain),
                "preserves_payload": b.preserves_payload,
                "attacked_defense": result.defense.spec,
            },
        )
        for b in result.bypasses
    )
    return Dataset(
        name=f"bypasses({result.defense.spec}, {result.dataset.spec})",
        samples=samples,
        sources=((result.dataset.spec, result.dataset.content_hash),),
    )


def _record(sample: Sample) -> dict[str, Any]:
    record: dict[str, Any] = {"id": sample.id, "text": sample.text, "label": sample.label}
    for column in _COLUMNS[3:]:
        value = getattr(sample, column)
        if value is not None:
            record[column] = value
    for key, value in sample.metadata.items():
        if key not in _COLUMNS and key != "prompt":
            record[key] = value
    return record


def _json_line(record: dict[str, Any]) -> str:
    """Readable UTF-8 JSON; ``\\u`` escapes when a lone surrogate cannot be UTF-8."""
    line = json.dumps(record, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record)
    return line


def write_jsonl(dataset: Dataset, path: str | Path) -> Path:
    """Write ``dataset`` as JSON Lines (atomically) that ``jsonl:PATH`` loads back.

    Metadata keys that collide with a column name (``id``, ``text``, ``label``,
    ...) or with ``prompt`` cannot survive the flat layout and are left out.
    """
    lines = [_json_line(_record(sample)) + "\n" for sample in dataset.samples]
    return write_text_atomic(path, "".join(lines))
