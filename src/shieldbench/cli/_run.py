"""``shieldbench run``: options -> a benchmark config -> ``run_benchmark`` -> the terminal.

The benchmark itself (jobs, reuse and resume, the output folder, the reports) is
:func:`shieldbench.benchmark.run_benchmark`; this command checks its options
(:mod:`shieldbench.cli._run_options`), turns them into a
:class:`~shieldbench.benchmark.BenchmarkConfig` (:mod:`shieldbench.cli._run_setup`),
shows the steps as they happen (:mod:`shieldbench.cli._run_events`), prints the
tables (:mod:`shieldbench.cli._run_tables`), records the runs in the history and
turns failures into exit codes. Heavy modules are imported inside the functions
that use them, so that ``shieldbench --help`` does not pay for them.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import typer
from rich.markup import escape

from shieldbench.cli._app import (
    EXIT_CODES_HELP,
    EXIT_FINDING,
    EXIT_INTERRUPTED,
    app,
    err_console,
)
from shieldbench.cli._datasets import dataset_spec
from shieldbench.cli._e2e import read_accuracy
from shieldbench.cli._guards import DEFAULT_MAX_ERROR_RATE, check_limit, error_rate_findings
from shieldbench.cli._help import option_panels
from shieldbench.cli._outpaths import check_out_dir
from shieldbench.cli._report import check_max_fpr
from shieldbench.cli._run_options import (
    BatchSizeOption,
    ConcurrencyOption,
    ConfigOption,
    DatasetsOption,
    DefensesOption,
    ErrorPolicyOption,
    JudgeAccuracyOption,
    JudgeRuleOption,
    JudgesOption,
    LatencySampleOption,
    MarginOption,
    MaxErrorRateOption,
    MaxFprOption,
    OutOption,
    OutputDefensesOption,
    ResumeOption,
    RetriesOption,
    ScreenOption,
    SystemPromptOption,
    TargetOption,
    TimeoutOption,
    WarmupOption,
)
from shieldbench.cli._run_setup import explicit_settings, resolve_config
from shieldbench.cli._scale import (
    ExecutorOption,
    GpusOption,
    RayAddressOption,
    ShardOption,
    WorkersOption,
    make_executor,
)
from shieldbench.cli._store import (
    DbOption,
    NoStoreOption,
    TagOption,
    open_cli_store,
    parse_tags,
    record,
)
from shieldbench.errors import ConfigError
from shieldbench.types import ERROR_POLICIES, Run

__all__ = ["run"]


def _check_options(
    error_policy: str | None,
    max_error_rate: float,
    max_fpr: float | None,
    *,
    resume_without_folder: bool,
) -> None:
    if error_policy is not None and error_policy not in ERROR_POLICIES:
        raise ConfigError(
            f"--error-policy {error_policy!r}: choose one of {', '.join(ERROR_POLICIES)}"
        )
    check_limit(max_error_rate)
    check_max_fpr(max_fpr)
    if resume_without_folder:
        raise ConfigError(
            "--resume needs the folder of the interrupted benchmark: pass --out DIR"
            " (the path printed when it started)"
        )


def _exit_on_error_rate(runs: Sequence[Run], max_error_rate: float) -> None:
    """Exit 1 (everything is written) when a run failed too many calls."""
    findings = error_rate_findings(runs, max_error_rate)
    for finding in findings:
        err_console.print(f"[bold red]error rate:[/] {escape(finding.message)}", highlight=False)
    if findings:
        raise typer.Exit(EXIT_FINDING)


def _interrupted(folder: Path, finished: int, total: int) -> typer.Exit:
    err_console.print(
        f"\n[bold yellow]interrupted:[/] {finished} of {total} runs finished, the"
        " current one is checkpointed. Resume with:\n"
        f"  shieldbench run --out {escape(shlex.quote(str(folder)))} --resume",
        highlight=False,
    )
    return typer.Exit(EXIT_INTERRUPTED)


@app.command("run", epilog=EXIT_CODES_HELP)
def run(
    ctx: typer.Context,
    defense: DefensesOption = None,
    dataset: DatasetsOption = None,
    config: ConfigOption = None,
    out: OutOption = None,
    resume: ResumeOption = False,
    error_policy: ErrorPolicyOption = None,
    timeout: TimeoutOption = None,
    concurrency: ConcurrencyOption = None,
    retries: RetriesOption = None,
    warmup: WarmupOption = None,
    batch_size: BatchSizeOption = None,
    latency_sample: LatencySampleOption = None,
    margin: MarginOption = None,
    max_fpr: MaxFprOption = None,
    db: DbOption = None,
    no_store: NoStoreOption = False,
    tag: TagOption = None,
    target: TargetOption = None,
    judge: JudgesOption = None,
    judge_rule: JudgeRuleOption = "any",
    output_defense: OutputDefensesOption = None,
    system_prompt: SystemPromptOption = None,
    screen: ScreenOption = "text",
    judge_accuracy: JudgeAccuracyOption = None,
    max_error_rate: MaxErrorRateOption = DEFAULT_MAX_ERROR_RATE,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    gpus_per_worker: GpusOption = None,
    shard: ShardOption = None,
) -> None:
    """Benchmark defenses on datasets: terminal summary, run files and reports."""
    from shieldbench.benchmark import BenchmarkInterrupted, EndToEndOptions, run_benchmark
    from shieldbench.cli._run_events import TerminalEvents
    from shieldbench.cli._run_tables import print_results
    from shieldbench.engine import parse_shard

    shard_of = None if shard is None else parse_shard(shard)
    pool_for = partial(
        make_executor, executor, address=ray_address, workers=workers, gpus=gpus_per_worker
    )
    pool_for("-")  # options checked early
    no_folder = resume and out is None and config is None
    _check_options(error_policy, max_error_rate, max_fpr, resume_without_folder=no_folder)
    overrides: dict[str, object] = {
        "error_policy": error_policy, "timeout_s": timeout, "concurrency": concurrency,
        "retries": retries, "warmup": warmup, "batch_size": batch_size,
        "latency_sample": latency_sample,
    }  # fmt: skip
    specs = defense or [], [dataset_spec(d) for d in dataset or []]
    cfg = resolve_config(config, *specs, overrides, margin, resume_from=out if resume else None)
    check_out_dir(out or cfg.out or Path("reports"), option="--out")  # before any work
    tags = parse_tags(tag)
    store = None if no_store else open_cli_store(db, ctx)
    e2e = None  # the config file's end_to_end section, if any
    if target is not None or cfg.end_to_end is None:
        e2e = EndToEndOptions(
            target, judge or [], rule=judge_rule, output_defenses=output_defense or [],
            system_prompt=system_prompt, screen=screen,
        )  # fmt: skip
    accuracy = read_accuracy(judge_accuracy)
    try:
        result = run_benchmark(
            cfg, out=out, resume=resume, explicit=explicit_settings(overrides, config),
            end_to_end=e2e, max_fpr=max_fpr, executor=pool_for, shard=shard_of,
            events=TerminalEvents(),
        )  # fmt: skip
    except BenchmarkInterrupted as stop:
        raise _interrupted(stop.folder, stop.finished, stop.total) from None
    print_results(result, accuracy)
    record(store, result.runs, source="run", tags=tags)
    _exit_on_error_rate(result.runs, max_error_rate)


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
