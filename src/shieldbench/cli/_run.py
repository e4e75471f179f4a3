"""``shieldbench run``: every defense over every dataset, then the reports.

Thin over the library: specs are built with ``build_defense`` / ``load_dataset``,
runs come from :func:`shieldbench.engine.run_defense`, figures from
:func:`shieldbench.metrics.summarize` / :func:`~shieldbench.metrics.compare_runs`,
files from :func:`shieldbench.reports.write_reports`.

The output folder holds ``benchmark.json`` (what was asked, so ``--resume`` can
check it is continuing the same benchmark), ``runs/NN-<defense>--<dataset>.json``
(one run file per pair, readable by ``report`` and ``compare``), the reports, and
while a run is in progress its checkpoint under ``checkpoints/``.

The settings and the manifest are resolved in :mod:`shieldbench.cli._run_setup`,
each pair runs in :mod:`shieldbench.cli._run_jobs`, and the terminal tables are
drawn by :mod:`shieldbench.cli._run_tables`. The engine, metrics and reports are
imported inside the functions that use them, so that ``shieldbench --help`` does
not pay for them.
"""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from shieldbench._memory import release_memory
from shieldbench.cli._app import (
    EXIT_CODES_HELP,
    EXIT_FINDING,
    EXIT_INTERRUPTED,
    app,
    console,
    err_console,
)
from shieldbench.cli._datasets import dataset_spec
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
)
from shieldbench.cli._help import option_panels
from shieldbench.cli._outpaths import check_out_dir
from shieldbench.cli._report import check_max_fpr
from shieldbench.cli._run_jobs import Job, load_datasets, run_job
from shieldbench.cli._run_setup import prepare_out, resolve_config
from shieldbench.cli._run_tables import summary_table
from shieldbench.cli._scale import (
    ExecutorOption,
    GpusOption,
    RayAddressOption,
    ShardOption,
    WorkersOption,
    make_executor,
)
from shieldbench.cli._stats import print_comparison
from shieldbench.cli._store import (
    DbOption,
    NoStoreOption,
    TagOption,
    lock_folder,
    open_cli_store,
    parse_tags,
    record,
)
from shieldbench.defenses import build_defense
from shieldbench.errors import ConfigError
from shieldbench.types import ERROR_POLICIES, Run, RunConfig

__all__ = ["run"]

_DEFAULTS = RunConfig()


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    ctx: typer.Context,
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
        typer.Option(
            help="Time limit per text in seconds (a batch of n texts gets n times it).",
            show_default=f"{_DEFAULTS.timeout_s:g}",
        ),
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
    latency_sample: Annotated[
        int | None,
        typer.Option(
            help="Texts of a batched run timed one per call (per-call latency; seeded; 0: none).",
            show_default=str(_DEFAULTS.latency_sample),
        ),
    ] = None,
    margin: Annotated[
        float | None,
        typer.Option(help="Warn when a category is too small for this margin.", show_default="0.1"),
    ] = None,
    max_fpr: Annotated[
        float | None,
        typer.Option(help="Your policy, FPR at most this (e.g. 0.02), drawn in the reports."),
    ] = None,
    db: DbOption = None,
    no_store: NoStoreOption = False,
    tag: TagOption = None,
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
    gpus_per_worker: GpusOption = None,
    shard: ShardOption = None,
) -> None:
    """Benchmark defenses on datasets: terminal summary, run files and reports."""
    from shieldbench.engine import parse_shard
    from shieldbench.metrics import compare_runs, summarize
    from shieldbench.reports import build_report, write_reports

    shard_of = None if shard is None else parse_shard(shard)
    pool_for = partial(
        make_executor, executor, address=ray_address, workers=workers, gpus=gpus_per_worker
    )
    pool_for("-")  # options checked early

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
        "latency_sample": latency_sample,
    }
    check_max_fpr(max_fpr)
    if resume and out is None and config is None:
        raise ConfigError(
            "--resume needs the folder of the interrupted benchmark: pass --out DIR"
            " (the path printed when it started)"
        )
    resume_from = out if resume else None
    cfg = resolve_config(
        config,
        defense or [],
        [dataset_spec(d) for d in dataset or []],
        overrides,
        margin,
        resume_from=resume_from,
    )
    check_out_dir(out or cfg.out or Path("reports"), option="--out")  # before any work
    tags = parse_tags(tag)
    store = None if no_store else open_cli_store(db, ctx)
    datasets = load_datasets(cfg.datasets, cfg.margin)
    release_memory()  # the loaders' temporaries: large data is held in columns from here
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
    pools = {spec: pool_for(spec) for spec in cfg.defenses}
    try:  # Ray workers and their resources checked before anything is written
        for pool in pools.values():
            if pool is not None:
                pool.start()
    except BaseException:
        for pool in pools.values():
            if pool is not None:
                pool.close()
        close_plan(plan)
        raise
    lock_folder(ctx, out or cfg.out)  # held until the command ends
    folder, benchmark_id, cfg = prepare_out(cfg, out, resume, explicit=explicit)
    where = escape(str(folder))
    console.print(f"writing to [bold]{where}[/] (resume with --out {where} --resume)")
    if plan is not None:
        canary = settle_manifest(folder, e2e, plan.canary, resume)
        if canary != plan.canary:
            close_plan(plan)
            plan = build_plan(e2e, canary)
    jobs = [
        Job(i, d, ds)
        for i, (d, ds) in enumerate((d, ds) for ds in cfg.datasets for d in cfg.defenses)
    ]
    runs: list[Run] = []
    try:
        for job in jobs:
            run_id = f"{benchmark_id}-{job.index:02d}"
            runs.append(
                run_job(
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
            release_memory()
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
        from shieldbench.defenses import close_every

        close_every(built.values())
    for spec in cfg.datasets:
        group = [r for r in runs if r.dataset.spec == spec]
        console.print(summary_table(spec, [summarize(r) for r in group]))
        if len(group) >= 2:
            print_comparison(compare_runs(group))
        print_end_to_end(group, accuracy)
    release_memory()
    title = f"shieldbench benchmark {benchmark_id}"
    paths = write_reports(
        build_report(runs, title=title, margin=cfg.margin, max_fpr=max_fpr), folder
    )
    release_memory()
    for fmt, path in sorted(paths.items()):
        console.print(f"{fmt:>4} report: {path}", highlight=False)
    if "html" in paths:
        console.print(f"open the HTML report: [bold]{escape(str(paths['html']))}[/]")
    record(store, runs, source="run", tags=tags)
    findings = error_rate_findings(runs, max_error_rate)
    for finding in findings:
        err_console.print(f"[bold red]error rate:[/] {escape(finding.message)}", highlight=False)
    if findings:
        raise typer.Exit(EXIT_FINDING)


option_panels(
    "run",
    {
        "What to run": ("defense", "dataset", "config", "resume"),
        "How": (
            "error_policy", "timeout", "concurrency", "retries", "warmup", "batch_size",
            "latency_sample", "margin", "max_fpr", "max_error_rate",
        ),
        "Where to write": ("out", "db", "no_store", "tag"),
        "End to end (the model behind the defense)": (
            "target", "judge", "judge_rule", "output_defense", "system_prompt", "screen",
            "judge_accuracy",
        ),
        "Scaling": ("executor", "ray_address", "workers", "gpus_per_worker", "shard"),
    },
)  # fmt: skip
