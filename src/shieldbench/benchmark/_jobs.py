"""A benchmark's jobs: one defense over one dataset, resumable, into ``runs/`` of the folder.

A job reuses its run file when it already holds the same measurement (same data,
defense and version, end-to-end or not, shard), continues from its checkpoint under
``checkpoints/`` when one is there, and deletes the checkpoint only once the run file
is safely on disk. The engine is imported inside :func:`run_job`, so that importing
the package does not pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench.benchmark._events import BenchmarkEvents
from shieldbench.benchmark._folder import run_format
from shieldbench.benchmark._plan import BenchmarkJob
from shieldbench.datasets import Dataset
from shieldbench.defenses import Defense, defense_version
from shieldbench.runio import load_run, save_run
from shieldbench.types import Run, RunConfig

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd, RayExecutor

__all__ = ["JobContext", "JobResult", "run_job"]


@dataclass(frozen=True, slots=True)
class JobResult:
    """A job's run, its run file, and whether it was reused or resumed."""

    run: Run
    path: Path
    reused: bool = False
    resumed: bool = False


@dataclass(frozen=True, slots=True)
class JobContext:
    """What every job of one benchmark shares."""

    config: RunConfig
    folder: Path
    events: BenchmarkEvents
    plan: EndToEnd | None = None
    shard: tuple[int, int] | None = None


def _same_measurement(
    done: Run, job: BenchmarkJob, defense: Defense, dataset: Dataset, ctx: JobContext
) -> bool:
    shard = None if ctx.shard is None else "{}/{}".format(*ctx.shard)
    return (
        done.dataset.content_hash == dataset.content_hash
        and done.defense.spec == job.defense
        and done.defense.version == defense_version(defense)
        and bool(done.end_to_end) == (ctx.plan is not None)
        and done.environment.get("shard") == shard
    )


def _finished(
    job: BenchmarkJob, defense: Defense, dataset: Dataset, ctx: JobContext, run_file: Path
) -> JobResult | None:
    """The job's run file when it already holds this measurement."""
    # a large end-to-end run finished before such runs were Parquet is a JSON file
    earlier = ctx.folder / "runs" / f"{job.slug}.json"
    found = run_file if run_file.is_file() else earlier if earlier.is_file() else None
    if found is None:
        return None
    done = load_run(found)
    if not _same_measurement(done, job, defense, dataset, ctx):
        return None
    ctx.events.job_reused(job, found)
    return JobResult(done, found, reused=True)


def run_job(
    job: BenchmarkJob,
    defense: Defense,
    dataset: Dataset,
    ctx: JobContext,
    run_id: str,
    *,
    executor: RayExecutor | None = None,
) -> JobResult:
    """Run (or reuse, or resume) ``job`` and save its run file in ``runs/``."""
    from shieldbench.engine import mark_shard, run_defense, shard_dataset

    total = len(dataset)
    if ctx.shard is not None:
        dataset = shard_dataset(dataset, *ctx.shard)
    # Parquet for large runs (every field, end-to-end records included), JSON otherwise.
    run_file = ctx.folder / "runs" / f"{job.slug}.{run_format(len(dataset))}"
    finished = _finished(job, defense, dataset, ctx, run_file)
    if finished is not None:
        return finished
    checkpoint = ctx.folder / "checkpoints" / f"{job.slug}.jsonl"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    resuming = checkpoint.exists()
    with ctx.events.job_progress(job, len(dataset)) as hook:
        run = run_defense(
            defense,
            dataset,
            config=ctx.config,
            defense_spec=job.defense,
            run_id=run_id,
            checkpoint=checkpoint,
            resume=resuming,
            keep_checkpoint=True,  # deleted below, once the run file is safely on disk
            progress=hook,
            end_to_end=ctx.plan,
            executor=executor,
        )
    if ctx.shard is not None:
        run = mark_shard(run, *ctx.shard, total)
    save_run(run, run_file)  # written whole and fsynced before the checkpoint goes
    checkpoint.unlink(missing_ok=True)
    if resuming:
        reused = int(run.environment.get("resumed_outcomes", "0"))
        ctx.events.job_resumed(job, reused, len(dataset))
    return JobResult(run, run_file, resumed=resuming)
