""":func:`run_benchmark`: every defense over every dataset, into one output folder.

The steps, in order (each one a function below): load the datasets; build the
end-to-end plan, the defenses and their executors (every spec is checked before
anything is written); lock and prepare the output folder (a new benchmark, or the
resumed one checked against its manifest); run the jobs, reusing finished run files
and continuing from checkpoints; close what was built; write the reports. The
result is a frozen :class:`Benchmark`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench._memory import release_memory
from shieldbench.benchmark._e2e import EndToEndOptions, build_end_to_end, close_end_to_end
from shieldbench.benchmark._events import BenchmarkEvents
from shieldbench.benchmark._folder import MANIFEST, prepare_folder, settle_end_to_end
from shieldbench.benchmark._jobs import JobContext, JobResult, run_job
from shieldbench.benchmark._plan import BenchmarkJob, plan_jobs
from shieldbench.config import BenchmarkConfig
from shieldbench.datasets import Dataset, load_dataset, sample_size_warnings
from shieldbench.defenses import Defense, build_defense, close_every
from shieldbench.errors import ConfigError
from shieldbench.types import Run, RunConfig

if TYPE_CHECKING:
    from shieldbench.engine import EndToEnd, RayExecutor

__all__ = ["Benchmark", "BenchmarkInterrupted", "run_benchmark"]

ExecutorFactory = Callable[[str], "RayExecutor | None"]


@dataclass(frozen=True, slots=True)
class Benchmark:
    """A finished benchmark: its runs, where they are, and what was reused.

    ``config`` is the benchmark as it ran (a resumed one: with its stored run
    settings); ``jobs``, ``runs`` and ``run_files`` are in job order (dataset by
    dataset, every defense on each); ``reused`` are the jobs whose finished run file
    was taken as is, ``resumed`` those continued from a checkpoint; ``reports`` maps
    each report format to its file (empty with ``reports=False``).
    """

    id: str
    config: BenchmarkConfig
    folder: Path
    jobs: tuple[BenchmarkJob, ...]
    runs: tuple[Run, ...]
    run_files: tuple[Path, ...]
    reused: tuple[BenchmarkJob, ...] = ()
    resumed: tuple[BenchmarkJob, ...] = ()
    reports: Mapping[str, Path] = field(default_factory=dict)

    @property
    def manifest(self) -> Path:
        """The folder's ``benchmark.json``."""
        return self.folder / MANIFEST

    def runs_on(self, dataset: str) -> tuple[Run, ...]:
        """The runs of every defense on ``dataset`` (a spec of ``config.datasets``)."""
        return tuple(r for j, r in zip(self.jobs, self.runs, strict=True) if j.dataset == dataset)


class BenchmarkInterrupted(KeyboardInterrupt):
    """Ctrl-C during a job: ``finished`` of ``total`` jobs are done, the current one is
    checkpointed in ``folder``; ``run_benchmark(..., out=folder, resume=True)`` continues."""

    def __init__(self, folder: Path, finished: int, total: int) -> None:
        super().__init__(f"benchmark in {folder} interrupted: {finished} of {total} jobs finished")
        self.folder = folder
        self.finished = finished
        self.total = total


@dataclass(slots=True)
class _Built:
    """The defenses, executors and end-to-end plan a benchmark opened (and closes)."""

    defenses: dict[str, Defense]
    pools: dict[str, RayExecutor | None]
    plan: EndToEnd | None
    owned: frozenset[str]  # defense specs built here (the caller's are not closed)
    own_plan: bool

    def close(self) -> None:
        """Close what was built here, once (a second call does nothing)."""
        plan, pools, owned = self.plan, list(self.pools.values()), sorted(self.owned)
        self.plan, self.pools, self.owned = None, {}, frozenset()
        built = [self.defenses.pop(spec) for spec in owned]
        try:
            if self.own_plan:
                close_end_to_end(plan)
        finally:
            close_every([*(pool for pool in pools if pool is not None), *built])


def _load_datasets(
    cfg: BenchmarkConfig, given: Mapping[str, Dataset], events: BenchmarkEvents
) -> dict[str, Dataset]:
    loaded: dict[str, Dataset] = {}
    for spec in cfg.datasets:
        ds = given[spec] if spec in given else load_dataset(spec)
        loaded[spec] = ds
        events.dataset_loaded(spec, ds, sample_size_warnings(ds.samples, margin=cfg.margin))
    release_memory()  # the loaders' temporaries: large data is held in columns from here
    return loaded


@contextmanager
def _built(
    cfg: BenchmarkConfig,
    given: Mapping[str, Defense],
    options: EndToEndOptions,
    plan: EndToEnd | None,
    executor: ExecutorFactory | None,
) -> Iterator[_Built]:
    """Build (and finally close) the plan, the defenses and the started executors."""
    own_plan = plan is None
    built = _Built({}, {}, build_end_to_end(options) if own_plan else plan, frozenset(), own_plan)
    try:
        for spec in cfg.defenses:
            built.defenses[spec] = given[spec] if spec in given else build_defense(spec)
            if spec not in given:
                built.owned |= {spec}
        for spec in cfg.defenses:  # Ray workers and their resources checked before writing
            built.pools[spec] = None if executor is None else executor(spec)
        for pool in built.pools.values():
            if pool is not None:
                pool.start()
        yield built
    finally:
        built.close()


@contextmanager
def _locked(folder: Path | None, events: BenchmarkEvents) -> Iterator[None]:
    if folder is None:  # a new folder named by the new benchmark id: nobody else has it
        yield
        return
    from shieldbench.locking import FolderLock

    lock = FolderLock(folder).acquire()
    try:
        if lock.stale:
            events.lock_taken_over(folder, lock.stale)
        yield
    finally:
        lock.release()


def _run_jobs(
    jobs: Sequence[BenchmarkJob],
    datasets: dict[str, Dataset],
    built: _Built,
    ctx: JobContext,
    benchmark_id: str,
) -> list[JobResult]:
    done: list[JobResult] = []
    try:
        for job in jobs:
            result = run_job(
                job,
                built.defenses[job.defense],
                datasets[job.dataset],
                ctx,
                f"{benchmark_id}-{job.index:02d}",
                executor=built.pools[job.defense],
            )
            done.append(result)
            if all(later.dataset != job.dataset for later in jobs[job.index + 1 :]):
                del datasets[job.dataset]  # its last job: free the samples (large data)
            release_memory()
    except KeyboardInterrupt:
        raise BenchmarkInterrupted(ctx.folder, len(done), len(jobs)) from None
    return done


def _settle_plan(
    built: _Built, options: EndToEndOptions, folder: Path, resume: bool
) -> EndToEnd | None:
    """The plan every pair uses: a resumed benchmark keeps its stored canary."""
    if built.plan is None:
        return None
    canary = settle_end_to_end(folder, options, built.plan.canary, resume)
    if canary != built.plan.canary and built.own_plan:
        close_end_to_end(built.plan)
        built.plan = build_end_to_end(options, canary)
    return built.plan


def _write_reports(
    runs: Sequence[Run], cfg: BenchmarkConfig, folder: Path, title: str, max_fpr: float | None
) -> dict[str, Path]:
    from shieldbench.reports import build_report, write_reports

    release_memory()
    paths = write_reports(
        build_report(runs, title=title, margin=cfg.margin, max_fpr=max_fpr), folder
    )
    release_memory()
    return dict(paths)


def _options(cfg: BenchmarkConfig, end_to_end: EndToEndOptions | None) -> EndToEndOptions:
    if end_to_end is not None:
        return end_to_end
    if cfg.end_to_end is not None:
        return EndToEndOptions.from_config(cfg.end_to_end)
    return EndToEndOptions(None)


def run_benchmark(
    config: BenchmarkConfig,
    *,
    out: str | Path | None = None,
    resume: bool = False,
    explicit: Sequence[str] | None = None,
    end_to_end: EndToEndOptions | None = None,
    reports: bool = True,
    max_fpr: float | None = None,
    executor: ExecutorFactory | None = None,
    shard: tuple[int, int] | None = None,
    defenses: Mapping[str, Defense] | None = None,
    datasets: Mapping[str, Dataset] | None = None,
    plan: EndToEnd | None = None,
    events: BenchmarkEvents | None = None,
) -> Benchmark:
    """Run every defense of ``config`` on every dataset; write run files and reports.

    ``out`` (default ``config.out``, else ``reports/<benchmark id>``) must be new or
    empty, unless ``resume=True`` continues the interrupted benchmark in it: finished
    pairs whose data and defense version are unchanged are reused, a pair in progress
    continues from its checkpoint, and the run settings stored in its manifest are
    used; a setting named in ``explicit`` (default: every one, as ``config`` states
    them all) that differs from the stored one is a :class:`~shieldbench.errors.RunError`.

    ``end_to_end`` overrides ``config.end_to_end``; ``reports=False`` writes run files
    only; ``max_fpr`` is drawn in the reports. ``executor(spec)`` gives each defense
    its executor (``None``: this process); ``shard=(i, n)`` runs block ``i`` of ``n``
    of every dataset. ``defenses``, ``datasets`` and ``plan`` are objects already
    built for some specs (the caller keeps and closes them). ``events`` hears about
    each step (see :class:`BenchmarkEvents`). Ctrl-C raises
    :class:`BenchmarkInterrupted`.
    """
    if not isinstance(config, BenchmarkConfig):
        raise ConfigError(f"run_benchmark: config must be a BenchmarkConfig, got {config!r}")
    events = events or BenchmarkEvents()
    options = _options(config, end_to_end)
    folder_arg = None if out is None else Path(out)
    loaded = _load_datasets(config, datasets or {}, events)
    with (
        _built(config, defenses or {}, options, plan, executor) as built,
        _locked(folder_arg or config.out, events),
    ):
        keys = [f.name for f in fields(RunConfig)] if explicit is None else explicit
        folder, benchmark_id, cfg = prepare_folder(config, folder_arg, resume, explicit=keys)
        events.started(folder, benchmark_id)
        ctx = JobContext(
            cfg.run, folder, events, _settle_plan(built, options, folder, resume), shard
        )
        jobs = plan_jobs(cfg)
        done = _run_jobs(jobs, loaded, built, ctx, benchmark_id)
        built.close()  # the defenses' memory back before the reports; the folder stays locked
        runs = tuple(r.run for r in done)
        title = f"shieldbench benchmark {benchmark_id}"
        paths = _write_reports(runs, cfg, folder, title, max_fpr) if reports else {}
    return Benchmark(
        id=benchmark_id,
        config=cfg,
        folder=folder,
        jobs=jobs,
        runs=runs,
        run_files=tuple(r.path for r in done),
        reused=tuple(j for j, r in zip(jobs, done, strict=True) if r.reused),
        resumed=tuple(j for j, r in zip(jobs, done, strict=True) if r.resumed),
        reports=paths,
    )
