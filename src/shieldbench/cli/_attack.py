"""``shieldbench attack``, ``shieldbench mutators`` and ``shieldbench datasets mutate``.

Thin over :mod:`shieldbench.attacks`: the search is :func:`run_attack`; the files are
``attack.json`` (the result's data, :func:`save_attack`), ``bypasses.jsonl``
(:func:`write_jsonl`, loadable with ``jsonl:``) and the reports ``report.json``,
``report.md`` and ``report.html`` (:func:`shieldbench.reports.write_reports`, the one
renderer of results; ``shieldbench report attack.json`` renders them again). The
search and the reports are imported inside the commands, so that
``shieldbench --help`` does not pay for them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from shieldbench.cli._app import app, console, datasets_app, err_console
from shieldbench.cli._attack_options import (
    AttackerOpt,
    BacktracksOpt,
    BatchSizeOpt,
    BeamWidthOpt,
    BranchingOpt,
    BudgetOpt,
    CompareOpt,
    ConcurrencyOpt,
    DatasetOpt,
    DefenseOpt,
    DepthOpt,
    ErrorPolicyOpt,
    EvaluatorOpt,
    ExamplesOpt,
    JudgeOpt,
    JudgeRuleOpt,
    MaxAttacksOpt,
    MaxDepthOpt,
    MutatorsOpt,
    OutOpt,
    OutputDefenseOpt,
    PriceOpt,
    ResumeOpt,
    RetriesOpt,
    RoundsOpt,
    ScreenOpt,
    SeedOpt,
    StrategyOpt,
    StreamsOpt,
    SystemPromptOpt,
    TargetOpt,
    TimeBudgetOpt,
    TimeoutOpt,
    TokenBudgetOpt,
    TransferOpt,
    TurnsOpt,
    WidthOpt,
)  # fmt: skip
from shieldbench.cli._console import echo_json
from shieldbench.cli._datasets import dataset_spec
from shieldbench.cli._e2e import attack_end_to_end
from shieldbench.cli._guards import single, unique_specs
from shieldbench.cli._outpaths import check_out_dir, check_out_file
from shieldbench.cli._report import print_report_paths
from shieldbench.cli._scale import (
    ExecutorOption,
    GpusOption,
    RayAddressOption,
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
from shieldbench.types import ERROR_POLICIES, TIERS, RunConfig

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, AttackSettings, RoundSummary
    from shieldbench.defenses import Defense
    from shieldbench.engine import EndToEnd, RayExecutor
    from shieldbench.store import Store

LLM_STRATEGIES = ("pair", "tap", "crescendo")  # shieldbench.attacks.LLM_STRATEGIES, unimported

__all__: list[str] = []


def _close(defenses: list[Defense]) -> None:
    from shieldbench.defenses import close_every

    close_every(defenses)


def _summary(result: AttackResult) -> Table:
    from shieldbench.attacks import format_asr

    f, c = result.figures, result.counts
    table = Table(
        title=f"Adaptive attack on {result.defense.spec} (95% Wilson intervals)",
        title_justify="left",
    )
    table.add_column("figure")
    table.add_column("value", overflow="fold")
    q = f.queries_to_bypass.bypass
    median = "–" if q.median is None else f"{q.median:g} (IQR {q.q1:g}–{q.q3:g})"
    rows = (
        ("static ASR", format_asr(f.static_asr)),
        ("adaptive ASR", format_asr(f.adaptive_asr)),
        ("payload-preserving ASR", format_asr(f.preserving_asr)),
        ("searched attacks bypassed", format_asr(f.target_bypass_rate)),
        ("median queries to first bypass", f"{median}; {q.n_never} never bypassed"),
        ("search queries", f"{c.search_queries} of {result.settings.budget}"
         f" ({c.errored_queries} errored); static pass {c.static_queries}"),
        ("strategy", result.meta.strategy),
    )  # fmt: skip
    for label, value in rows:
        table.add_row(label, Text(value))
    for t in result.transfer:
        table.add_row(
            f"transfer to {t.defense.spec}",
            Text(f"{format_asr(t.evaded)} evaded; originals {format_asr(t.original_asr)}"),
        )
    return table


@dataclass(frozen=True, slots=True)
class _SearchJob:
    """The mutator search's command, parsed: what to attack, how, and where to write."""

    spec: str
    data_spec: str
    out: Path
    settings: AttackSettings
    config: RunConfig
    transfer: list[str]
    plan: EndToEnd | None
    examples: int
    store: Store | None
    tags: dict[str, str]
    executor: RayExecutor | None


def _engine_config(
    error_policy: str, timeout: float, concurrency: int, retries: int, batch_size: int
) -> RunConfig:
    if error_policy not in ERROR_POLICIES:
        raise ConfigError(
            f"--error-policy {error_policy!r}: choose one of {', '.join(ERROR_POLICIES)}"
        )
    return RunConfig(
        error_policy=error_policy,  # type: ignore[arg-type]  # checked above
        timeout_s=timeout or None,
        concurrency=concurrency,
        retries=retries,
        warmup=0,
        batch_size=batch_size,
    )


def _settings(strategy: str, mutator_names: str | None, base: AttackSettings) -> AttackSettings:
    """``base`` with the strategy and mutators checked and set."""
    from shieldbench.attacks import STRATEGIES, resolve_mutators

    if strategy not in STRATEGIES:
        raise ConfigError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    names = tuple(m.name for m in resolve_mutators(mutator_names))
    return dataclasses.replace(
        base,
        strategy=strategy,  # type: ignore[arg-type]  # checked against STRATEGIES above
        mutators=names if mutator_names else (),
    )


def _print_round(r: RoundSummary) -> None:
    from shieldbench.attacks import format_asr

    err_console.print(
        f"round {r.round}: {r.candidates} candidates, {r.queries} queries, ASR {format_asr(r.asr)}",
        highlight=False,
    )


def _search(job: _SearchJob) -> AttackResult:
    """Build the defenses, run the search (and its transfer), close them."""
    from shieldbench.attacks import run_attack
    from shieldbench.datasets import load_dataset
    from shieldbench.defenses import build_defense

    data = load_dataset(dataset_spec(job.data_spec))
    built: list[Defense] = []
    try:
        built += [build_defense(s) for s in (job.spec, *job.transfer)]
        return run_attack(
            built[0],
            data,
            settings=job.settings,
            config=job.config,
            defense_spec=job.spec,
            transfer=dict(zip(job.transfer, built[1:], strict=True)),
            on_round=_print_round,
            executor=job.executor,
        )
    finally:
        if job.executor is not None:
            job.executor.close()
        _close(built)


def _run_search(job: _SearchJob) -> None:
    """The mutator search end to end: attack, files, end-to-end replay, reports, history."""
    from shieldbench.attacks import bypasses_dataset, save_attack, write_jsonl
    from shieldbench.benchmark import close_end_to_end as close_plan
    from shieldbench.reports import build_report, write_reports

    plan = job.plan
    try:
        result = _search(job)
    except BaseException:
        close_plan(plan)
        raise
    console.print(_summary(result))
    paths = {
        "attack": save_attack(result, job.out / "attack.json"),
        "bypasses": write_jsonl(bypasses_dataset(result), job.out / "bypasses.jsonl"),
    }
    if plan is not None:
        try:
            found = attack_end_to_end(bypasses_dataset(result), plan, job.config, job.out, job.spec)
        finally:
            close_plan(plan)
        if found is not None:
            paths["end to end"] = found
    for kind, path in paths.items():
        console.print(f"{kind:>9}: {path}", highlight=False)
    report = build_report([], attack=result, examples=job.examples)
    print_report_paths(write_reports(report, job.out))
    record(job.store, [], source="attack", tags=job.tags, attacks=[result.to_dict()])


@app.command("attack")
def attack(
    defense: DefenseOpt = None,
    dataset: DatasetOpt = None,
    out: OutOpt = None,
    budget: BudgetOpt = 1000,
    rounds: RoundsOpt = 5,
    seed: SeedOpt = 0,
    mutator_names: MutatorsOpt = None,
    strategy: StrategyOpt = "auto",
    attacker: AttackerOpt = None,
    evaluator: EvaluatorOpt = None,
    streams: StreamsOpt = 3,
    depth: DepthOpt = 3,
    width: WidthOpt = 4,
    branching: BranchingOpt = 2,
    turns: TurnsOpt = 5,
    backtracks: BacktracksOpt = 3,
    screen_mode: ScreenOpt = "user_turns",
    token_budget: TokenBudgetOpt = None,
    time_budget: TimeBudgetOpt = None,
    price: PriceOpt = None,
    compare_mutators: CompareOpt = False,
    resume: ResumeOpt = False,
    beam_width: BeamWidthOpt = 4,
    max_depth: MaxDepthOpt = 3,
    max_attacks: MaxAttacksOpt = None,
    transfer: TransferOpt = None,
    error_policy: ErrorPolicyOpt = "fail_closed",
    timeout: TimeoutOpt = 30.0,
    concurrency: ConcurrencyOpt = 8,
    retries: RetriesOpt = 2,
    batch_size: BatchSizeOpt = 32,
    examples: ExamplesOpt = 5,
    db: DbOption = None,
    no_store: NoStoreOption = False,
    tag: TagOption = None,
    target_model: TargetOpt = None,
    judge: JudgeOpt = None,
    judge_rule: JudgeRuleOpt = "any",
    output_defense: OutputDefenseOpt = None,
    system_prompt: SystemPromptOpt = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    gpus_per_worker: GpusOption = None,
) -> None:
    """Attack a defense adaptively: mutate the attacks it blocks until they get through,
    within a query budget; report static vs adaptive ASR, ASR per query, what worked.
    With --strategy pair, tap or crescendo an attacker model rewrites them instead.
    With --target and --judge, the bypasses are then sent to the model and judged
    (end_to_end.json)."""
    from shieldbench.attacks import AttackSettings
    from shieldbench.benchmark import EndToEndOptions as E2EOptions
    from shieldbench.benchmark import build_end_to_end as build_plan

    spec = single(defense, option="--defense", what="defense")
    data_spec = single(dataset, option="--dataset", what="dataset")
    if out is None:
        raise ConfigError("missing option --out: name the report folder")
    transfers = list(unique_specs(transfer or [], option="--transfer"))
    config = _engine_config(error_policy, timeout, concurrency, retries, batch_size)
    e2e = E2EOptions(target_model, judge or [], rule=judge_rule,
                     output_defenses=output_defense or [], system_prompt=system_prompt)  # fmt: skip
    chosen = [s.strip() for s in strategy.split(",")]
    if all(s in LLM_STRATEGIES for s in chosen):
        from shieldbench.cli._attack_llm import LLMCommand, LLMOptions, run_llm_command

        opts = LLMOptions(attacker, evaluator, streams, depth, width, branching, turns,
                          backtracks, screen_mode, token_budget, time_budget, price,
                          compare_mutators, resume)  # fmt: skip
        run_llm_command(LLMCommand(chosen, spec, data_spec, out, budget, seed, max_attacks,
                                   transfers, config, build_plan(e2e), opts, db, no_store,
                                   parse_tags(tag)))  # fmt: skip
        return
    check_out_dir(out, option="--out")  # before the data is loaded or a query is sent
    settings = _settings(strategy, mutator_names, AttackSettings(
        budget=budget, rounds=rounds, seed=seed, beam_width=beam_width, max_depth=max_depth,
        max_attacks=max_attacks))  # fmt: skip
    plan = build_plan(e2e)  # specs checked before the attack spends its budget
    tags = parse_tags(tag)
    store = None if no_store else open_cli_store(db)
    pool = make_executor(executor, spec, address=ray_address, workers=workers, gpus=gpus_per_worker)
    _run_search(_SearchJob(spec, data_spec, out, settings, config, transfers, plan, examples,
                           store, tags, pool))  # fmt: skip


@app.command("mutators")
def list_mutators(
    family: Annotated[str | None, typer.Option(help="Only this family.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The mutators for `attack` and `datasets mutate`: family, whether a model can still
    read the payload, whether it is exactly reversible."""
    from shieldbench.attacks import FAMILIES, mutators

    if family is not None and family not in FAMILIES:
        raise ConfigError(f"--family {family!r}: choose one of {', '.join(FAMILIES[:-1])}")
    chosen = [m for m in mutators if family is None or m.family == family]
    if as_json:
        echo_json([m.to_dict() for m in chosen])
        return
    table = Table(title=f"{len(chosen)} mutators")
    for column in ("name", "family", "keeps payload", "reversible", "random", "description"):
        table.add_column(column, overflow="fold")
    for m in chosen:
        table.add_row(
            m.name,
            m.family,
            "yes" if m.preserves_payload else "no",
            "yes" if m.reversible else "no",
            "yes" if m.needs_rng else "no",
            Text(m.description),
        )
    console.print(table)


@datasets_app.command("mutate")
def mutate(
    spec: Annotated[str, typer.Argument(help="Dataset spec to mutate.")],
    mutator_names: Annotated[
        str, typer.Option("--mutators", help="Comma-separated mutators, a+b chains or families.")
    ],
    out: Annotated[Path, typer.Option(help="JSONL file to write (load it with jsonl:FILE).")],
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same variants).")] = 0,
    only_attacks: Annotated[
        bool, typer.Option("--only-attacks", help="Mutate attack samples only.")
    ] = False,
    tier: Annotated[str, typer.Option(help=f"Tier of the variants: {', '.join(TIERS)}.")] = (
        "adaptive"
    ),
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
) -> None:
    """Write a dataset of mutated variants (one per sample and mutator), each labelled
    with its parent id and mutator, e.g. an encoding or paraphrased tier of a suite."""
    from shieldbench.attacks import mutate_dataset, write_jsonl
    from shieldbench.datasets import load_dataset

    check_out_file(out, option="--out", force=force)
    variants = mutate_dataset(
        load_dataset(spec), mutator_names, seed=seed, only_attacks=only_attacks, tier=tier
    )
    path = write_jsonl(variants, out)
    counts = variants.label_counts()
    console.print(
        f"wrote {len(variants)} variants ({counts['attack']} attack, {counts['benign']} benign,"
        f" tier {tier}) to {path}; load them with jsonl:{path}",
        highlight=False,
    )
