"""``run``'s jobs: one defense over one dataset, resumable, into ``runs/`` of the folder.

A job reuses its run file when it already holds the same measurement (same data,
defense and version, end-to-end or not, shard), continues from its checkpoint under
``checkpoints/`` when one is there, and deletes the checkpoint only once the run file
is safely on disk. The engine is imported inside :func:`run_job`, so that
``shieldbench --help`` does not pay for it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from shieldbench.cli._app import console, err_console
from shieldbench.cli._console import progress
from shieldbench.cli._run_tables import print_size_warnings
from shieldbench.cli._scale import run_format
from shieldbench.datasets import Dataset, load_dataset, sample_size_warnings
from shieldbench.defenses import Defense, defense_version
from shieldbench.runio import load_run, save_run
from shieldbench.types import Run, RunConfig

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd, RayExecutor

__all__ = ["Job", "load_datasets", "run_job"]


@dataclass(frozen=True, slots=True)
class Job:
    index: int
    defense: str
    dataset: str

    @property
    def slug(self) -> str:
        return f"{self.index:02d}-{_slug(self.defense)}--{_slug(self.dataset)}"


def _slug(spec: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-.")
    return (text or "spec")[:60]


def load_datasets(specs: Sequence[str], margin: float) -> dict[str, Dataset]:
    loaded: dict[str, Dataset] = {}
    for spec in specs:
        ds = load_dataset(spec)
        loaded[spec] = ds
        counts = ds.label_counts()
        console.print(
            f"dataset [bold]{spec}[/]: {len(ds)} samples ({counts['attack']} attack,"
            f" {counts['benign']} benign), version {ds.content_hash[:19]}…",
            highlight=False,
        )
        print_size_warnings(sample_size_warnings(ds.samples, margin=margin))
    return loaded


def run_job(
    job: Job,
    defense: Defense,
    dataset: Dataset,
    cfg: RunConfig,
    out: Path,
    run_id: str,
    plan: EndToEnd | None = None,
    *,
    executor: RayExecutor | None = None,
    shard: tuple[int, int] | None = None,
) -> Run:
    from shieldbench.engine import mark_shard, run_defense, shard_dataset

    total = len(dataset)
    if shard is not None:
        dataset = shard_dataset(dataset, *shard)
    # Parquet for large runs (every field, end-to-end records included), JSON otherwise.
    run_file = out / "runs" / f"{job.slug}.{run_format(len(dataset))}"
    # a large end-to-end run finished before such runs were Parquet is a JSON file
    earlier = out / "runs" / f"{job.slug}.json"
    found = run_file if run_file.is_file() else earlier if earlier.is_file() else None
    if found is not None:
        done = load_run(found)
        if (
            done.dataset.content_hash == dataset.content_hash
            and done.defense.spec == job.defense
            and done.defense.version == defense_version(defense)
            and bool(done.end_to_end) == (plan is not None)
            and done.environment.get("shard") == (None if shard is None else "{}/{}".format(*shard))
        ):
            console.print(f"[dim]{job.defense} on {job.dataset}: already done, reusing {found}")
            return done
    checkpoint = out / "checkpoints" / f"{job.slug}.jsonl"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    label = f"{job.defense} · {job.dataset}"
    resuming = checkpoint.exists()
    with progress(err_console, label, len(dataset)) as hook:
        run = run_defense(
            defense,
            dataset,
            config=cfg,
            defense_spec=job.defense,
            run_id=run_id,
            checkpoint=checkpoint,
            resume=resuming,
            keep_checkpoint=True,  # deleted below, once the run file is safely on disk
            progress=hook,
            end_to_end=plan,
            executor=executor,
        )
    if shard is not None:
        run = mark_shard(run, *shard, total)
    save_run(run, run_file)  # written whole and fsynced before the checkpoint goes
    checkpoint.unlink(missing_ok=True)
    reused = int(run.environment.get("resumed_outcomes", "0"))
    if resuming:
        console.print(
            f"[dim]{escape(label)}: resumed, reused {reused} of {len(dataset)} outcomes from"
            f" the checkpoint, screened {len(dataset) - reused}",
            highlight=False,
        )
    return run
