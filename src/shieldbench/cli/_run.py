"""``shieldbench run``: every defense over every dataset, then the reports.

Thin over the library: specs are built with ``build_defense`` / ``load_dataset``,
runs come from :func:`shieldbench.engine.run_defense`, figures from
:func:`shieldbench.metrics.summarize` / :func:`~shieldbench.metrics.compare_runs`,
files from :func:`shieldbench.reports.write_reports`.

The output folder holds ``benchmark.json`` (what was asked, so ``--resume`` can
check it is continuing the same benchmark), ``runs/NN-<defense>--<dataset>.json``
(one run file per pair, readable by ``report`` and ``compare``), the reports, and
while a run is in progress its checkpoint under ``checkpoints/``.

The engine, metrics and reports are imported inside the functions that use them, so
that ``shieldbench --help`` does not pay for them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from shieldbench.cli._app import app, console, err_console
from shieldbench.cli._scale import (
    ExecutorOption,
    RateColumn,
    RayAddressOption,
    ShardOption,
    WorkersOption,
    make_executor,
    run_format,
)
from shieldbench.cli._stats import format_rate, print_comparison
from shieldbench.config import BenchmarkConfig, load_config
from shieldbench.datasets import (
    Dataset,
    SampleSizeWarning,
    load_dataset,
    sample_size_warnings,
)
from shieldbench.defenses import Defense, build_defense, defense_version
from shieldbench.errors import ConfigError, RunError
from shieldbench.runio import load_run, save_run
from shieldbench.types import ERROR_POLICIES, Run, RunConfig

if TYPE_CHECKING:
    from shieldbench.engine import RayExecutor
    from shieldbench.metrics import RunSummary

__all__ = ["run"]

_MANIFEST = "benchmark.json"


@dataclass(frozen=True, slots=True)
class _Job:
    index: int
    defense: str
    dataset: str

    @property
    def slug(self) -> str:
        return f"{self.index:02d}-{_slug(self.defense)}--{_slug(self.dataset)}"


def _slug(spec: str) -> str:
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-.")
    return (text or "spec")[:60]


def _resolve(
    config_file: Path | None,
    defenses: Sequence[str],
    datasets: Sequence[str],
    overrides: dict[str, object],
    margin: float | None,
) -> BenchmarkConfig:
    if config_file is not None:
        cfg = load_config(config_file)
        if defenses:
            cfg = replace(cfg, defenses=tuple(defenses))
        if datasets:
            cfg = replace(cfg, datasets=tuple(datasets))
    else:
        if not defenses or not datasets:
            raise ConfigError(
                "name at least one --defense and one --dataset, or a --config file;"
                " e.g. shieldbench run --defense pattern --dataset builtin:smoke"
            )
        cfg = BenchmarkConfig(defenses=tuple(defenses), datasets=tuple(datasets))
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        try:
            cfg = replace(cfg, run=replace(cfg.run, **given))  # type: ignore[arg-type]
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if margin is not None:
        cfg = replace(cfg, margin=margin)
    return cfg


def _manifest(cfg: BenchmarkConfig, benchmark_id: str) -> dict[str, object]:
    return {
        "kind": "shieldbench.benchmark",
        "schema_version": 1,
        "id": benchmark_id,
        "defenses": list(cfg.defenses),
        "datasets": list(cfg.datasets),
        "run": cfg.run.to_dict(),
        "margin": cfg.margin,
    }


def _prepare_out(
    cfg: BenchmarkConfig, out: Path | None, resume: bool, *, explicit: Sequence[str] = ()
) -> tuple[Path, str, BenchmarkConfig]:
    """The output folder, the benchmark id (new, or the resumed one's) and the config.

    On ``--resume`` the run settings stored in ``benchmark.json`` are used, so every
    pair of the benchmark runs (and is reported) with the same ones; a setting in
    ``explicit`` (given on the command line or in a config file) that differs from
    the stored one is an error rather than a silent mix.
    """
    target = out or cfg.out
    if resume:
        if target is None:
            raise ConfigError(
                "--resume needs the folder of the interrupted benchmark: pass --out DIR"
                " (the path printed when it started)"
            )
        manifest_path = target / _MANIFEST
        try:
            old = json.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunError(f"{manifest_path}: nothing to resume here (no {_MANIFEST})") from None
        except json.JSONDecodeError as exc:
            raise RunError(f"{manifest_path}:{exc.lineno}: not JSON ({exc.msg})") from None
        for key in ("defenses", "datasets"):
            if old.get(key) != list(getattr(cfg, key)):
                raise RunError(
                    f"{manifest_path}: the interrupted benchmark ran {key} {old.get(key)};"
                    f" this command asks for {list(getattr(cfg, key))}. Resume with the same"
                    " specs, or start a new benchmark without --resume."
                )
        stored = RunConfig.from_dict(old.get("run") or {})
        changed = [
            f"{key}={getattr(stored, key)!r} (asked: {getattr(cfg.run, key)!r})"
            for key in explicit
            if getattr(stored, key) != getattr(cfg.run, key)
        ]
        if changed:
            raise RunError(
                f"{manifest_path}: the interrupted benchmark ran with {', '.join(changed)};"
                " resume without changing the run settings (the stored ones are used),"
                " or start a new benchmark without --resume."
            )
        return target, str(old["id"]), replace(cfg, run=stored)
    from shieldbench.engine import new_run_id

    benchmark_id = new_run_id()
    target = target or Path("reports") / benchmark_id
    if (target / _MANIFEST).exists():
        raise RunError(
            f"{target} already holds a benchmark; pass --resume to continue it,"
            " or choose another --out"
        )
    target.mkdir(parents=True, exist_ok=True)
    (target / _MANIFEST).write_text(
        json.dumps(_manifest(cfg, benchmark_id), indent=1) + "\n", encoding="utf-8"
    )
    return target, benchmark_id, cfg


def _print_size_warnings(warnings: Sequence[SampleSizeWarning], margin: float) -> None:
    """One line per label: the categories too small for a ``±margin`` interval."""
    for warning in (w for w in warnings if w.scope == "label"):
        err_console.print(f"  [yellow]sample size:[/] {warning.message}", highlight=False)
    for label in ("attack", "benign"):
        small = [w for w in warnings if w.scope == "category" and w.label == label]
        if small:
            names = ", ".join(f"{w.name} ({w.n})" for w in small)
            err_console.print(
                f"  [yellow]sample size:[/] {len(small)} {label} categories have fewer than the"
                f" {small[0].required} samples a ±{margin:.0%} margin needs: {names}",
                highlight=False,
            )


def _load_datasets(specs: Sequence[str], margin: float) -> dict[str, Dataset]:
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
        _print_size_warnings(sample_size_warnings(ds.samples, margin=margin), margin)
    return loaded


def _run_job(
    job: _Job,
    defense: Defense,
    dataset: Dataset,
    cfg: RunConfig,
    out: Path,
    run_id: str,
    *,
    executor: RayExecutor | None = None,
    shard: tuple[int, int] | None = None,
) -> Run:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    from shieldbench.engine import run_defense
    from shieldbench.engine._shards import mark_shard, shard_dataset

    total = len(dataset)
    if shard is not None:
        dataset = shard_dataset(dataset, *shard)
    run_file = out / "runs" / f"{job.slug}.{run_format(len(dataset))}"
    if run_file.exists():
        done = load_run(run_file)
        if (
            done.dataset.content_hash == dataset.content_hash
            and done.defense.spec == job.defense
            and done.defense.version == defense_version(defense)
            and done.environment.get("shard") == (None if shard is None else "{}/{}".format(*shard))
        ):
            console.print(f"[dim]{job.defense} on {job.dataset}: already done, reusing {run_file}")
            return done
    checkpoint = out / "checkpoints" / f"{job.slug}.jsonl"
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    label = f"{job.defense} · {job.dataset}"
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as bar:
        task = bar.add_task(label, total=len(dataset))

        def hook(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        run = run_defense(
            defense,
            dataset,
            config=cfg,
            defense_spec=job.defense,
            run_id=run_id,
            checkpoint=checkpoint,
            resume=checkpoint.exists(),
            progress=hook,
            executor=executor,
        )
    if shard is not None:
        run = mark_shard(run, *shard, total)
    save_run(run, run_file)
    return run


def _summary_table(dataset: str, summaries: Sequence[RunSummary]) -> Table:
    table = Table(title=f"{dataset} (95% Wilson intervals)", title_justify="left", highlight=False)
    table.add_column("defense", overflow="fold")
    table.add_column("block rate (TPR)")
    table.add_column("ASR")
    table.add_column("FPR")
    for column in ("p50 ms", "/s", "errors"):
        table.add_column(column, justify="right")
    for s in summaries:
        ops = s.operations
        p50 = ops.latency.p50.value
        rate_s = ops.throughput.samples_per_s
        table.add_row(
            s.defense.spec,
            format_rate(s.rates.block_rate),
            format_rate(s.rates.attack_success_rate, n=False),
            format_rate(s.rates.false_positive_rate),
            "–" if p50 is None else f"{p50:.2f}",
            "–" if rate_s is None else f"{rate_s:,.0f}",
            str(ops.errors.total),
        )
    return table


@app.command("run")
def run(
    defense: Annotated[
        list[str] | None, typer.Option("--defense", "-d", help="Defense spec (repeatable).")
    ] = None,
    dataset: Annotated[
        list[str] | None, typer.Option("--dataset", "-D", help="Dataset spec (repeatable).")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="YAML benchmark config file.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Report folder (default reports/<benchmark id>/).")
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the interrupted benchmark in --out.")
    ] = False,
    error_policy: Annotated[
        str | None, typer.Option(help=f"How errors count: {', '.join(ERROR_POLICIES)}.")
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="Per-call timeout in seconds.")] = None,
    concurrency: Annotated[int | None, typer.Option(help="Calls in flight.")] = None,
    retries: Annotated[int | None, typer.Option(help="Retries of transient errors.")] = None,
    warmup: Annotated[int | None, typer.Option(help="Warm-up calls, not timed.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Texts per batch call.")] = None,
    margin: Annotated[
        float | None, typer.Option(help="Warn when a category is too small for this margin.")
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    shard: ShardOption = None,
) -> None:
    """Benchmark defenses on datasets: terminal summary, run files and reports."""
    from shieldbench.engine._shards import parse_shard
    from shieldbench.metrics import compare_runs, summarize
    from shieldbench.reports import build_report, write_reports

    shard_of = None if shard is None else parse_shard(shard)
    make_executor(executor, "-", address=ray_address, workers=workers)  # options checked early

    if error_policy is not None and error_policy not in ERROR_POLICIES:
        raise ConfigError(
            f"--error-policy {error_policy!r}: choose one of {', '.join(ERROR_POLICIES)}"
        )
    overrides: dict[str, object] = {
        "error_policy": error_policy,
        "timeout_s": timeout,
        "concurrency": concurrency,
        "retries": retries,
        "warmup": warmup,
        "batch_size": batch_size,
    }
    cfg = _resolve(config, defense or [], dataset or [], overrides, margin)
    datasets = _load_datasets(cfg.datasets, cfg.margin)
    built = {spec: build_defense(spec) for spec in cfg.defenses}
    explicit = [k for k, v in overrides.items() if v is not None]
    if config is not None:
        explicit = list(RunConfig.__dataclass_fields__)  # the file states every setting
    folder, benchmark_id, cfg = _prepare_out(cfg, out, resume, explicit=explicit)
    console.print(f"writing to [bold]{folder}[/] (resume with --out {folder} --resume)")
    jobs = [
        _Job(i, d, ds)
        for i, (d, ds) in enumerate((d, ds) for ds in cfg.datasets for d in cfg.defenses)
    ]
    runs: list[Run] = []
    pools = {
        spec: make_executor(executor, spec, address=ray_address, workers=workers)
        for spec in cfg.defenses
    }
    try:
        for job in jobs:
            run_id = f"{benchmark_id}-{job.index:02d}"
            runs.append(
                _run_job(
                    job,
                    built[job.defense],
                    datasets[job.dataset],
                    cfg.run,
                    folder,
                    run_id,
                    executor=pools[job.defense],
                    shard=shard_of,
                )
            )
            if all(later.dataset != job.dataset for later in jobs[job.index + 1 :]):
                del datasets[job.dataset]  # its last job: free the samples (large data)
    finally:
        for pool in pools.values():
            if pool is not None:
                pool.close()
        for d in built.values():
            close = getattr(d, "close", None)
            if callable(close):
                close()
    for spec in cfg.datasets:
        group = [r for r in runs if r.dataset.spec == spec]
        console.print(_summary_table(spec, [summarize(r) for r in group]))
        if len(group) >= 2:
            print_comparison(compare_runs(group))
    title = f"shieldbench benchmark {benchmark_id}"
    paths = write_reports(build_report(runs, title=title, margin=cfg.margin), folder)
    for fmt, path in sorted(paths.items()):
        console.print(f"{fmt:>4} report: {path}", highlight=False)
    if "html" in paths:
        console.print(f"open the HTML report: [bold]{paths['html']}[/]")
