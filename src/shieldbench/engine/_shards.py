"""Shards: one run split across N independent jobs, and merging them back into one run.

``shard_dataset(data, I, N)`` keeps the I-th of N contiguous blocks of the
dataset (1-based; sizes differ by at most one) and keeps the *whole* dataset's
content hash, so every shard's run names the data it is part of. A shard's run
records ``environment["shard"] = "I/N"`` (:func:`mark_shard`).

:func:`merge_runs` checks that the runs fit together (same defense spec and
version, same dataset spec and hash, same run settings, shards 1..N each exactly
once) and concatenates them in shard order. Because the blocks are contiguous, the
merged samples are the dataset in its original order; the merge recomputes their
content hash and refuses the result unless it equals the recorded one, so a merged
run is, sample for sample, the run an unsplit job would have produced (its
statistics are the same; only timings differ).

Example:
    >>> from shieldbench.datasets import Dataset
    >>> from shieldbench.types import Sample
    >>> data = Dataset("inline", tuple(Sample(str(i), f"t{i}", "benign") for i in range(5)))
    >>> [[s.id for s in shard_dataset(data, i, 2)] for i in (1, 2)]
    [['0', '1'], ['2', '3', '4']]
    >>> shard_dataset(data, 2, 2).content_hash == data.content_hash
    True
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from shieldbench._views import ChainView
from shieldbench.datasets import Dataset, content_hash
from shieldbench.errors import ConfigError, RunError
from shieldbench.types import DatasetInfo, Outcome, Run, Sample

__all__ = ["mark_shard", "merge_runs", "parse_shard", "shard_bounds", "shard_dataset"]

_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> ``(I, N)`` with ``1 <= I <= N``; :class:`ConfigError` otherwise.

    >>> parse_shard("2/8")
    (2, 8)
    """
    match = _SHARD.fullmatch(text or "")
    if match is None:
        raise ConfigError(f"--shard {text!r}: write I/N, e.g. 2/8 for the second of eight shards")
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count:
        raise ConfigError(f"--shard {text!r}: I must be between 1 and N (got {index}/{count})")
    return index, count


def shard_bounds(n: int, index: int, count: int) -> tuple[int, int]:
    """``[start, stop)`` of block ``index`` (1-based) of ``count`` over ``n`` items.

    >>> [shard_bounds(10, i, 3) for i in (1, 2, 3)]
    [(0, 3), (3, 6), (6, 10)]
    """
    return (index - 1) * n // count, index * n // count


def shard_dataset(dataset: Dataset, index: int, count: int) -> Dataset:
    """Block ``index`` of ``count`` of ``dataset``, carrying the whole dataset's hash."""
    start, stop = shard_bounds(len(dataset), index, count)
    return Dataset(
        dataset.name,
        dataset.samples[start:stop],
        content_hash=dataset.content_hash,
        description=dataset.description,
        sources=dataset.sources,
    )


def mark_shard(run: Run, index: int, count: int, total: int) -> Run:
    """``run`` noting that it is shard ``index``/``count`` of a ``total``-sample dataset."""
    env = {**run.environment, "shard": f"{index}/{count}", "shard_total": str(total)}
    return dataclasses.replace(run, environment=env)


def _shard_of(run: Run, where: str) -> tuple[int, int, int]:
    shard = run.environment.get("shard")
    if shard is None:
        raise RunError(f"{where}: not a shard (run without --shard); merge only shard runs")
    index, count = parse_shard(shard)
    try:
        total = int(run.environment.get("shard_total", ""))
    except ValueError:
        raise RunError(f"{where}: shard {shard} does not record its dataset size") from None
    return index, count, total


def merge_runs(runs: Sequence[Run], *, names: Sequence[str] | None = None) -> Run:
    """One run from the shard runs of one job; :class:`RunError` if they do not fit.

    ``names`` (file names, for messages) default to the run ids.
    """
    if not runs:
        raise RunError("nothing to merge: give the shard run files")
    labels = list(names) if names is not None else [r.id for r in runs]
    shards = [(*_shard_of(r, w), r, w) for r, w in zip(runs, labels, strict=True)]
    first = shards[0][3]
    count, total = shards[0][1], shards[0][2]
    for _index, n, tot, run, where in shards[1:]:
        _check_same_job(first, labels[0], run, where, (count, total), (n, tot))
    by_index = _by_index(shards, count)
    ordered = [by_index[i][0] for i in range(1, count + 1)]
    for i, run in enumerate(ordered, 1):
        start, stop = shard_bounds(total, i, count)
        if len(run.samples) != stop - start:
            raise RunError(
                f"{by_index[i][1]}: shard {i}/{count} holds {len(run.samples)} samples, not the"
                f" {stop - start} its block of a {total}-sample dataset has"
            )
    # Read in place, not copied: shard runs loaded from Parquet stay columnar.
    samples = ChainView([r.samples for r in ordered])
    digest = content_hash(samples)
    if digest != first.dataset.content_hash:
        raise RunError(
            f"the merged samples hash to {digest}, not the dataset's {first.dataset.content_hash};"
            " the shards were cut from different data"
        )
    env = {k: v for k, v in first.environment.items() if k not in ("shard", "shard_total")}
    env["merged_shards"] = str(count)
    outcomes = ChainView([r.outcomes for r in ordered])
    return Run(
        id=first.id,
        defense=first.defense,
        dataset=DatasetInfo(first.dataset.spec, digest, len(samples), first.dataset.sources),
        config=first.config,
        samples=samples,
        outcomes=outcomes,
        started=min(r.started for r in ordered),
        finished=max(r.finished for r in ordered),
        environment=env,
        end_to_end=_merged_end_to_end(
            ordered, [by_index[i + 1][1] for i in range(count)], samples, outcomes
        ),
    )


def _check_same_job(
    first: Run,
    first_label: str,
    run: Run,
    where: str,
    first_shape: tuple[int, int],
    shape: tuple[int, int],
) -> None:
    """:class:`RunError` unless ``run`` is a shard of the same job as ``first``: same
    defense, dataset, shard count, dataset size and run settings."""
    for what, mine, theirs in (
        ("defense", first.defense.spec, run.defense.spec),
        ("defense version", first.defense.version, run.defense.version),
        ("dataset", first.dataset.spec, run.dataset.spec),
        ("dataset content hash", first.dataset.content_hash, run.dataset.content_hash),
        ("number of shards", first_shape[0], shape[0]),
        ("dataset size", first_shape[1], shape[1]),
    ):
        if mine != theirs:
            raise RunError(
                f"{where}: {what} {theirs!r} differs from {first_label}'s {mine!r};"
                " these shards belong to different jobs"
            )
    if run.config != first.config:
        diff = [
            f"{k}={getattr(run.config, k)!r} vs {getattr(first.config, k)!r}"
            for k in first.config.to_dict()
            if getattr(run.config, k) != getattr(first.config, k)
        ]
        raise RunError(
            f"{where}: run settings differ from {first_label}'s ({', '.join(diff)});"
            " every shard must run with the same settings"
        )


def _by_index(
    shards: Sequence[tuple[int, int, int, Run, str]], count: int
) -> dict[int, tuple[Run, str]]:
    """Shard number -> (run, label); :class:`RunError` on a repeat or a missing shard."""
    by_index: dict[int, tuple[Run, str]] = {}
    for index, _n, _tot, run, where in shards:
        if index in by_index:
            raise RunError(
                f"{where}: shard {index}/{count} given twice (also {by_index[index][1]})"
            )
        by_index[index] = (run, where)
    missing = [str(i) for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise RunError(f"incomplete set: shard(s) {', '.join(missing)} of {count} missing")
    return by_index


def _merged_end_to_end(
    runs: Sequence[Run],
    where: Sequence[str],
    samples: Sequence[Sample],
    outcomes: Sequence[Outcome],
) -> dict[str, Any]:
    """The shards' end-to-end record: the same plan in each, the profile over all answers."""
    plans = [{k: v for k, v in r.end_to_end.items() if k != "profile"} for r in runs]
    for plan, label in zip(plans[1:], where[1:], strict=True):
        if plan != plans[0]:
            raise RunError(
                f"{label}: its end-to-end settings differ from {where[0]}'s; every shard must"
                " run with the same target, judges and system prompt"
            )
    if not plans[0]:
        return {}
    from shieldbench.judges import behaviour_profile

    canary = plans[0].get("canary")
    profile = behaviour_profile(
        samples, outcomes, canary=canary if isinstance(canary, str) else None
    )
    return plans[0] | {"profile": profile.to_dict()}
