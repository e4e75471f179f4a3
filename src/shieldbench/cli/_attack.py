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

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from shieldbench.attacks import FAMILIES, STRATEGIES, AttackSettings, mutators, resolve_mutators
from shieldbench.cli._app import app, console, datasets_app, err_console
from shieldbench.cli._console import echo_json
from shieldbench.cli._datasets import dataset_spec
from shieldbench.cli._e2e import E2EOptions, attack_end_to_end, build_plan, close_plan
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
from shieldbench.datasets import load_dataset
from shieldbench.defenses import Defense, build_defense
from shieldbench.errors import ConfigError
from shieldbench.types import ERROR_POLICIES, TIERS, RunConfig

if TYPE_CHECKING:
    from shieldbench.attacks import AttackResult, RoundSummary

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


@app.command("attack")
def attack(
    defense: Annotated[
        list[str] | None,
        typer.Option("--defense", "-d", help="Defense spec to attack (one; required)."),
    ] = None,
    dataset: Annotated[
        list[str] | None,
        typer.Option(
            "--dataset", "-D", help="Dataset spec; its attack samples are used (one; required)."
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Report folder (attack.json, bypasses.jsonl, report.*; required)."),
    ] = None,
    budget: Annotated[
        int, typer.Option(min=0, help="Search queries allowed (static pass not counted).")
    ] = 1000,
    rounds: Annotated[int, typer.Option(min=1, help="Search rounds.")] = 5,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same attack).")] = 0,
    mutator_names: Annotated[
        str | None,
        typer.Option(
            "--mutators", help="Comma-separated mutators, a+b chains or families (default: all)."
        ),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            help=f"Search: {', '.join(STRATEGIES)} (auto: beam if scored), or an LLM-driven"
            " pair, tap, crescendo (needs --attacker)."
        ),
    ] = "auto",
    attacker: Annotated[
        str | None,
        typer.Option(
            help="pair/tap/crescendo: the attacker chat endpoint (openai:M@URL, llm:...)."
        ),
    ] = None,
    evaluator: Annotated[
        str | None, typer.Option(help="pair/tap/crescendo: on-goal evaluator (default: attacker).")
    ] = None,
    streams: Annotated[int, typer.Option(min=1, help="pair: parallel streams.")] = 3,
    depth: Annotated[int, typer.Option(min=1, help="pair/tap: refinements per stream.")] = 3,
    width: Annotated[int, typer.Option(min=1, help="tap: nodes kept per level.")] = 4,
    branching: Annotated[int, typer.Option(min=1, help="tap: children per node.")] = 2,
    turns: Annotated[int, typer.Option(min=1, help="crescendo: most turns.")] = 5,
    backtracks: Annotated[int, typer.Option(min=0, help="crescendo: most backtracks.")] = 3,
    screen_mode: Annotated[
        str,
        typer.Option("--screen", help="crescendo: what the defense screens (user_turns, all...)."),
    ] = "user_turns",
    token_budget: Annotated[
        int | None, typer.Option(min=0, help="pair/tap/crescendo: attacker tokens allowed.")
    ] = None,
    time_budget: Annotated[
        float | None, typer.Option(help="pair/tap/crescendo: wall seconds allowed.")
    ] = None,
    price: Annotated[
        str | None,
        typer.Option(help="Attacker PROMPT,COMPLETION price per million tokens (cost estimate)."),
    ] = None,
    compare_mutators: Annotated[
        bool,
        typer.Option("--compare-mutators", help="Also run the mutator search at the same queries."),
    ] = False,
    resume: Annotated[
        bool, typer.Option("--resume", help="pair/tap/crescendo: go on from transcripts.jsonl.")
    ] = False,
    beam_width: Annotated[int, typer.Option(min=1, help="Candidates kept by beam search.")] = 4,
    max_depth: Annotated[int, typer.Option(min=1, help="Longest mutation chain.")] = 3,
    max_attacks: Annotated[
        int | None, typer.Option(min=1, help="Attack samples to use (seeded subset).")
    ] = None,
    transfer: Annotated[
        list[str] | None,
        typer.Option("--transfer", help="Replay the bypasses against this defense (repeatable)."),
    ] = None,
    error_policy: Annotated[
        str, typer.Option(help=f"How static errors count: {', '.join(ERROR_POLICIES)}.")
    ] = "fail_closed",
    timeout: Annotated[
        float, typer.Option(help="Per-call timeout in seconds (0: no limit).")
    ] = 30.0,
    concurrency: Annotated[int, typer.Option(min=1, help="Calls in flight.")] = 8,
    retries: Annotated[int, typer.Option(min=0, help="Retries of transient errors.")] = 2,
    batch_size: Annotated[int, typer.Option(min=1, help="Texts per batch call.")] = 32,
    examples: Annotated[
        int,
        typer.Option(
            min=0, help="Example bypasses per attack category in report.md (HTML, JSON: more)."
        ),
    ] = 5,
    db: DbOption = None,
    no_store: NoStoreOption = False,
    tag: TagOption = None,
    target_model: Annotated[
        str | None,
        typer.Option(
            "--target", help="End to end: send the bypasses to this model (openai:MODEL@URL...)."
        ),
    ] = None,
    judge: Annotated[
        list[str] | None, typer.Option("--judge", help="End to end: judge (repeatable).")
    ] = None,
    judge_rule: Annotated[str, typer.Option(help="any, all or majority.")] = "any",
    output_defense: Annotated[
        list[str] | None,
        typer.Option("--output-defense", help="End to end: screen the answers (repeatable)."),
    ] = None,
    system_prompt: Annotated[
        str | None, typer.Option(help="End to end: system prompt text or @FILE.")
    ] = None,
    executor: ExecutorOption = "local",
    ray_address: RayAddressOption = None,
    workers: WorkersOption = None,
    gpus_per_worker: GpusOption = None,
) -> None:
    """Attack a defense adaptively: mutate the attacks it blocks until they get through,
    within a query budget; report static vs adaptive ASR, ASR per query, what worked.
    With --target and --judge, the bypasses are then sent to the model and judged
    (end_to_end.json)."""
    from shieldbench.attacks import (
        bypasses_dataset,
        format_asr,
        run_attack,
        save_attack,
        write_jsonl,
    )
    from shieldbench.reports import build_report, write_reports

    spec = single(defense, option="--defense", what="defense")
    data_spec = single(dataset, option="--dataset", what="dataset")
    if out is None:
        raise ConfigError("missing option --out: name the report folder")
    transfer = list(unique_specs(transfer or [], option="--transfer"))
    chosen = [s.strip() for s in strategy.split(",")]
    if all(s in ("pair", "tap", "crescendo") for s in chosen):
        from shieldbench.cli._attack_llm import LLMOptions, run_llm_command

        if len(set(chosen)) < len(chosen):
            raise ConfigError(f"--strategy {strategy!r}: a strategy is named twice")
        if not resume:
            check_out_dir(out, option="--out")
        run_llm_command(
            strategies=chosen,
            spec=spec,
            data_spec=data_spec,
            out=out,
            budget=budget,
            seed=seed,
            max_attacks=max_attacks,
            transfer=transfer,
            config=RunConfig(
                timeout_s=timeout or None, concurrency=concurrency, retries=retries, warmup=0
            ),
            plan=build_plan(
                E2EOptions(
                    target_model,
                    judge or [],
                    rule=judge_rule,
                    output_defenses=output_defense or [],
                    system_prompt=system_prompt,
                )
            ),
            opts=LLMOptions(
                attacker,
                evaluator,
                streams,
                depth,
                width,
                branching,
                turns,
                backtracks,
                screen_mode,
                token_budget,
                time_budget,
                price,
                compare_mutators,
                resume,
            ),
        )
        return
    check_out_dir(out, option="--out")  # before the data is loaded or a query is sent
    if strategy not in STRATEGIES:
        raise ConfigError(f"--strategy {strategy!r}: choose one of {', '.join(STRATEGIES)}")
    if error_policy not in ERROR_POLICIES:
        raise ConfigError(
            f"--error-policy {error_policy!r}: choose one of {', '.join(ERROR_POLICIES)}"
        )
    e2e = E2EOptions(
        target_model,
        judge or [],
        rule=judge_rule,
        output_defenses=output_defense or [],
        system_prompt=system_prompt,
    )
    plan = build_plan(e2e)  # specs checked before the attack spends its budget
    names = tuple(m.name for m in resolve_mutators(mutator_names))
    settings = AttackSettings(
        budget=budget,
        rounds=rounds,
        seed=seed,
        strategy=strategy,  # type: ignore[arg-type]  # checked against STRATEGIES above
        beam_width=beam_width,
        max_depth=max_depth,
        max_attacks=max_attacks,
        mutators=names if mutator_names else (),
    )
    config = RunConfig(
        error_policy=error_policy,  # type: ignore[arg-type]  # checked above
        timeout_s=timeout or None,
        concurrency=concurrency,
        retries=retries,
        warmup=0,
        batch_size=batch_size,
    )
    tags = parse_tags(tag)
    store = None if no_store else open_cli_store(db)
    pool = make_executor(executor, spec, address=ray_address, workers=workers, gpus=gpus_per_worker)
    data = load_dataset(dataset_spec(data_spec))
    built: list[Defense] = []
    try:
        target = build_defense(spec)
        built.append(target)
        others: dict[str, Defense] = {}
        for other in transfer:
            others[other] = build_defense(other)
            built.append(others[other])

        def report(r: RoundSummary) -> None:
            err_console.print(
                f"round {r.round}: {r.candidates} candidates, {r.queries} queries,"
                f" ASR {format_asr(r.asr)}",
                highlight=False,
            )

        result = run_attack(
            target,
            data,
            settings=settings,
            config=config,
            defense_spec=spec,
            transfer=others,
            on_round=report,
            executor=pool,
        )
    finally:
        if pool is not None:
            pool.close()
        _close(built)
    console.print(_summary(result))
    paths = {
        "attack": save_attack(result, out / "attack.json"),
        "bypasses": write_jsonl(bypasses_dataset(result), out / "bypasses.jsonl"),
    }
    if plan is not None:
        try:
            e2e_file = attack_end_to_end(bypasses_dataset(result), plan, config, out, spec)
        finally:
            close_plan(plan)
        if e2e_file is not None:
            paths["end to end"] = e2e_file
    for kind, path in paths.items():
        console.print(f"{kind:>9}: {path}", highlight=False)
    print_report_paths(write_reports(build_report([], attack=result, examples=examples), out))
    record(store, [], source="attack", tags=tags, attacks=[result.to_dict()])


@app.command("mutators")
def list_mutators(
    family: Annotated[str | None, typer.Option(help="Only this family.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """The mutators for `attack` and `datasets mutate`: family, whether a model can still
    read the payload, whether it is exactly reversible."""
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
