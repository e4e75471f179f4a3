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
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from shieldbench._textio import read_text_input, write_text_atomic
from shieldbench.cli._app import (
    EXIT_CODES_HELP,
    EXIT_FINDING,
    EXIT_INTERRUPTED,
    app,
    console,
    err_console,
)
from shieldbench.cli._console import progress
from shieldbench.cli._e2e import (
    E2EOptions,
    build_plan,
    close_plan,
    print_end_to_end,
    read_accuracy,
    settle_manifest,
)
from shieldbench.cli._guards import (
    DEFAULT_MAX_ERROR_RATE,
    check_limit,
    error_rate_findings,
    unique_specs,
)
from shieldbench.cli._outpaths import check_out_dir
from shieldbench.cli._report import check_max_fpr
from shieldbench.cli._scale import (
    ExecutorOption,
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
    from shieldbench.engine import EndToEnd, RayExecutor
    from shieldbench.metrics import RunSummary

__all__ = ["run"]

_MANIFEST = "benchmark.json"
_DEFAULTS = RunConfig()


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
    *,
    resume_from: Path | None = None,
) -> BenchmarkConfig:
    defenses = unique_specs(defenses, option="--defense")
    datasets = unique_specs(datasets, option="--dataset")
    if config_file is not None:
        cfg = load_config(config_file)
        pairs = (("--defense", defenses, "defenses"), ("--dataset", datasets, "datasets"))
        for option, specs, key in pairs:
            if specs and tuple(specs) != getattr(cfg, key):
                raise ConfigError(
                    f"{option} {', '.join(specs)} with --config {config_file}, which names"
                    f" {key} {', '.join(getattr(cfg, key))}: edit the config's {key}: list,"
                    " or drop --config and name every spec on the command line"
                )
    elif not defenses and not datasets and resume_from is not None:
        cfg = _from_manifest(resume_from)
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


def _from_manifest(folder: Path) -> BenchmarkConfig:
    """The specs of the benchmark in ``folder`` (``run --out DIR --resume`` alone)."""
    path = folder / _MANIFEST
    if not path.exists():
        raise RunError(f"{path}: nothing to resume here (no {_MANIFEST})")
    try:
        old = json.loads(read_text_input(path, error=RunError, what=_MANIFEST))
        return BenchmarkConfig(
            defenses=tuple(old["defenses"]),
            datasets=tuple(old["datasets"]),
            margin=float(old.get("margin", 0.1)),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RunError(f"{path}: not a readable benchmark manifest ({exc})") from None


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
        if not manifest_path.exists():
            raise RunError(f"{manifest_path}: nothing to resume here (no {_MANIFEST})")
        try:
            old = json.loads(read_text_input(manifest_path, error=RunError, what=_MANIFEST))
        except json.JSONDecodeError as exc:
            raise RunError(f"{manifest_path}:{exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(old, dict) or not isinstance(old.get("id"), str):
            raise RunError(f"{manifest_path}: not a shieldbench benchmark manifest")
        for key in ("defenses", "datasets"):
            if old.get(key) != list(getattr(cfg, key)):
                raise RunError(
                    f"{manifest_path}: the interrupted benchmark ran {key} {old.get(key)};"
                    f" this command asks for {list(getattr(cfg, key))}. Resume with the same"
                    " specs, or start a new benchmark without --resume."
                )
        try:
            stored = RunConfig.from_dict(old.get("run") or {})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunError(f"{manifest_path}: bad run settings ({exc})") from None
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
    if target.is_dir() and any(target.iterdir()):
        raise RunError(
            f"--out {target}: the folder holds other files and no benchmark; run writes"
            " reports and run files there, so choose a new or empty folder"
        )
    write_text_atomic(target / _MANIFEST, json.dumps(_manifest(cfg, benchmark_id), indent=1) + "\n")
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
    plan: EndToEnd | None = None,
    *,
    executor: RayExecutor | None = None,
    shard: tuple[int, int] | None = None,
) -> Run:
    from shieldbench.engine import run_defense
    from shieldbench.engine._shards import mark_shard, shard_dataset

    total = len(dataset)
    if shard is not None:
        dataset = shard_dataset(dataset, *shard)
    # Parquet for large runs; end-to-end records are kept in JSON run files only.
    suffix = run_format(len(dataset)) if plan is None else "json"
    run_file = out / "runs" / f"{job.slug}.{suffix}"
    if run_file.is_file():
        done = load_run(run_file)
        if (
            done.dataset.content_hash == dataset.content_hash
            and done.defense.spec == job.defense
            and done.defense.version == defense_version(defense)
            and bool(done.end_to_end) == (plan is not None)
            and done.environment.get("shard") == (None if shard is None else "{}/{}".format(*shard))
        ):
            console.print(f"[dim]{job.defense} on {job.dataset}: already done, reusing {run_file}")
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


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    defense: Annotated[
        list[str] | None, typer.Option("--defense", "-d", help="Defense spec (repeatable).")
    ] = None,
    dataset: Annotated[
        list[str] | None, typer.Option("--dataset", "-D", help="Dataset spec (repeatable).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", "-c", help="YAML benchmark config file (its relative paths: to the file)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Report folder (default reports/<benchmark id>/).")
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue the interrupted benchmark in --out (its specs and settings"
            " are read from DIR/benchmark.json).",
        ),
    ] = False,
    error_policy: Annotated[
        str | None,
        typer.Option(
            help=f"How errors count: {', '.join(ERROR_POLICIES)}.",
            show_default=_DEFAULTS.error_policy,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(help="Per-call timeout in seconds.", show_default=f"{_DEFAULTS.timeout_s:g}"),
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Calls in flight.", show_default=str(_DEFAULTS.concurrency))
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(help="Retries of transient errors.", show_default=str(_DEFAULTS.retries)),
    ] = None,
    warmup: Annotated[
        int | None,
        typer.Option(help="Warm-up calls, not timed.", show_default=str(_DEFAULTS.warmup)),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(help="Texts per batch call.", show_default=str(_DEFAULTS.batch_size)),
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option(help="Warn when a category is too small for this margin.", show_default="0.1"),
    ] = None,
    max_fpr: Annotated[
        float | None,
        typer.Option(help="Your policy, FPR at most this (e.g. 0.02), drawn in the reports."),
    ] = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="End to end: the model behind the defense (openai:MODEL@URL, llm:..., python:...)."
        ),
    ] = None,
    judge: Annotated[
        list[str] | None,
        typer.Option(
            "--judge",
            help="End to end: judge of success (repeatable):"
            " refusal, leak, secrets, pii, llm-judge:..., python:...",
        ),
    ] = None,
    judge_rule: Annotated[
        str, typer.Option(help="How several judges combine: any, all, majority.")
    ] = "any",
    output_defense: Annotated[
        list[str] | None,
        typer.Option(help="End to end: defense screening the answer (e.g. leak, secrets)."),
    ] = None,
    system_prompt: Annotated[
        str | None,
        typer.Option(
            help="End to end: system prompt text or @FILE; {canary} is replaced by the"
            " run's canary (default: a support-bot prompt with a canary)."
        ),
    ] = None,
    screen: Annotated[
        str,
        typer.Option(
            help="What the defense screens of a conversation:"
            " text, last_user, user_turns, tool_results, all."
        ),
    ] = "text",
    judge_accuracy: Annotated[
        Path | None,
        typer.Option(
            help="JSON of 'shieldbench judges evaluate --json':"
            " adds the Rogan-Gladen corrected ASR."
        ),
    ] = None,
    max_error_rate: Annotated[
        float,
        typer.Option(
            help="Exit 1 (after writing everything) when a run's share of failed calls"
            " (errors + timeouts) is above this."
        ),
    ] = DEFAULT_MAX_ERROR_RATE,
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
    check_limit(max_error_rate)
    overrides: dict[str, object] = {
        "error_policy": error_policy,
        "timeout_s": timeout,
        "concurrency": concurrency,
        "retries": retries,
        "warmup": warmup,
        "batch_size": batch_size,
    }
    check_max_fpr(max_fpr)
    if resume and out is None and config is None:
        raise ConfigError(
            "--resume needs the folder of the interrupted benchmark: pass --out DIR"
            " (the path printed when it started)"
        )
    resume_from = out if resume else None
    cfg = _resolve(config, defense or [], dataset or [], overrides, margin, resume_from=resume_from)
    check_out_dir(out or cfg.out or Path("reports"), option="--out")  # before any work
    datasets = _load_datasets(cfg.datasets, cfg.margin)
    e2e = E2EOptions(
        target, judge or [], rule=judge_rule, output_defenses=output_defense or [],
        system_prompt=system_prompt, screen=screen,
    )  # fmt: skip
    if target is None and cfg.end_to_end is not None:  # the config file's end_to_end section
        e2e = E2EOptions.from_config(cfg.end_to_end)
    accuracy = read_accuracy(judge_accuracy)
    plan = build_plan(e2e)  # every spec checked before anything is written
    built = {spec: build_defense(spec) for spec in cfg.defenses}
    explicit = [k for k, v in overrides.items() if v is not None]
    if config is not None:
        explicit = list(RunConfig.__dataclass_fields__)  # the file states every setting
    folder, benchmark_id, cfg = _prepare_out(cfg, out, resume, explicit=explicit)
    where = escape(str(folder))
    console.print(f"writing to [bold]{where}[/] (resume with --out {where} --resume)")
    if plan is not None:
        canary = settle_manifest(folder, e2e, plan.canary, resume)
        if canary != plan.canary:
            close_plan(plan)
            plan = build_plan(e2e, canary)
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
                    plan,
                    executor=pools[job.defense],
                    shard=shard_of,
                )
            )
            if all(later.dataset != job.dataset for later in jobs[job.index + 1 :]):
                del datasets[job.dataset]  # its last job: free the samples (large data)
    except KeyboardInterrupt:
        err_console.print(
            f"\n[bold yellow]interrupted:[/] {len(runs)} of {len(jobs)} runs finished, the"
            " current one is checkpointed. Resume with:\n"
            f"  shieldbench run --out {escape(shlex.quote(str(folder)))} --resume",
            highlight=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        close_plan(plan)
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
        print_end_to_end(group, accuracy)
    title = f"shieldbench benchmark {benchmark_id}"
    paths = write_reports(
        build_report(runs, title=title, margin=cfg.margin, max_fpr=max_fpr), folder
    )
    for fmt, path in sorted(paths.items()):
        console.print(f"{fmt:>4} report: {path}", highlight=False)
    if "html" in paths:
        console.print(f"open the HTML report: [bold]{escape(str(paths['html']))}[/]")
    findings = error_rate_findings(runs, max_error_rate)
    for finding in findings:
        err_console.print(f"[bold red]error rate:[/] {escape(finding.message)}", highlight=False)
    if findings:
        raise typer.Exit(EXIT_FINDING)
