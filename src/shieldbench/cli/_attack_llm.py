"""``shieldbench attack --strategy pair|tap|crescendo --attacker SPEC``: the LLM-driven attacks.

Called by ``attack`` when the strategy is one of :data:`LLM_STRATEGIES`. Writes
``llm_attack.json`` (the result: every transcript, the transfer to ``--transfer``
defenses and, with ``--compare-mutators``, the mutator search at the same number of
queries), ``transcripts.jsonl`` (one finished attack per line; ``--resume`` reads
it back and goes on), ``llm_attack.md`` (the report) and ``llm_asr.svg`` (ASR
against queries, every strategy on one plot with its interval band), and records
each result in the history store like a run. ``shieldbench report
llm_attack.json ...`` renders the report again from the results alone.
``--strategy pair,tap,crescendo`` runs several, each into its own folder, reported
together. With ``--target`` (and ``--judge``), PAIR and TAP send the candidates the
defense lets through to the model and tell the attacker its answer and the judges'
verdict; Crescendo's turns are answered by it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench._textio import write_text_atomic
from shieldbench.benchmark import close_end_to_end as close_plan
from shieldbench.cli._app import console, err_console
from shieldbench.cli._outpaths import check_out_dir
from shieldbench.cli._report import print_report_paths
from shieldbench.cli._store import open_cli_store, record
from shieldbench.datasets import Dataset, load_dataset
from shieldbench.defenses import Defense, build_defense, close_every
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

if TYPE_CHECKING:
    from shieldbench.attacks import Attacker, LLMAttackResult, LLMSettings, TargetOutcome
    from shieldbench.engine import EndToEnd

__all__ = ["LLMCommand", "LLMOptions", "run_llm_command"]


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """The ``attack`` options that only the LLM strategies read."""

    attacker: str | None
    evaluator: str | None
    streams: int
    depth: int
    width: int
    branching: int
    turns: int
    backtracks: int
    screen: str
    token_budget: int | None
    time_budget: float | None
    price: str | None
    compare_mutators: bool
    resume: bool


@dataclass(frozen=True, slots=True)
class LLMCommand:
    """What to attack, where to write, and where to record (the shared ``attack`` options)."""

    strategies: list[str]
    spec: str
    data_spec: str
    out: Path
    budget: int
    seed: int
    max_attacks: int | None
    transfer: list[str]
    config: RunConfig
    plan: EndToEnd | None
    opts: LLMOptions
    db: str | None = None
    no_store: bool = True
    tags: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _prices(text: str | None) -> tuple[float, float]:
    if text is None:
        return (0.0, 0.0)
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise ConfigError(
            f"--price {text!r}: give PROMPT,COMPLETION prices per million tokens, e.g. 0.15,0.6"
        ) from None
    return (a, b)


def _plans(cmd: LLMCommand) -> list[tuple[LLMSettings, Path]]:
    """Each strategy's settings and folder, checked before any model is called."""
    from shieldbench.attacks import Budget, LLMSettings

    o = cmd.opts
    plans = []
    for strategy in cmd.strategies:
        folder = cmd.out if len(cmd.strategies) == 1 else cmd.out / strategy
        settings = LLMSettings(
            strategy,  # type: ignore[arg-type]  # checked by the caller
            budget=Budget(cmd.budget, o.token_budget, o.time_budget),
            seed=cmd.seed, streams=o.streams, depth=o.depth, width=o.width,
            branching=o.branching, turns=o.turns, backtracks=o.backtracks,
            screen=o.screen, max_attacks=cmd.max_attacks, price_per_mtok=_prices(o.price),
            concurrency=cmd.config.concurrency,
        )  # fmt: skip
        transcripts = folder / "transcripts.jsonl"
        if transcripts.exists() and not o.resume:
            raise ConfigError(f"{transcripts} exists: pass --resume to go on from it, or remove it")
        plans.append((settings, folder))
    return plans


def _one(
    cmd: LLMCommand,
    settings: LLMSettings,
    folder: Path,
    defenses: list[Defense],
    data: Dataset,
    models: tuple[Attacker, Attacker | None],
) -> LLMAttackResult:
    """One strategy: the attack, then its transfer and mutator comparison, in one record."""
    from shieldbench.attacks import AttackSettings, llm_transfer, run_attack, run_llm_attack

    folder.mkdir(parents=True, exist_ok=True)
    result = run_llm_attack(
        defenses[0], data, models[0], settings=settings, evaluator=models[1],
        end_to_end=cmd.plan, config=cmd.config, defense_spec=cmd.spec,
        transcripts=folder / "transcripts.jsonl", on_target=_progress,
    )  # fmt: skip
    transfer = tuple(
        llm_transfer(result, d, defense_spec=s, config=cmd.config)
        for s, d in zip(cmd.transfer, defenses[1:], strict=True)
    )
    comparison = None
    if cmd.opts.compare_mutators and result.queries:
        same = AttackSettings(budget=result.queries, seed=cmd.seed, max_attacks=cmd.max_attacks)
        comparison = run_attack(defenses[0], data, settings=same, config=cmd.config)
    return dataclasses.replace(result, transfer=transfer, comparison=comparison)


def _checked(cmd: LLMCommand) -> list[tuple[LLMSettings, Path]]:
    """Every option checked before a model is built or a query sent."""
    if cmd.opts.attacker is None:
        raise ConfigError(
            f"--strategy {','.join(cmd.strategies)} needs --attacker SPEC (a chat endpoint,"
            " e.g. llm:ollama/llama3.2 or openai:MODEL@http://127.0.0.1:11434/v1)"
        )
    if len(set(cmd.strategies)) < len(cmd.strategies):
        raise ConfigError(f"--strategy {','.join(cmd.strategies)}: a strategy is named twice")
    if not cmd.opts.resume:
        check_out_dir(cmd.out, option="--out")
    return _plans(cmd)


def run_llm_command(cmd: LLMCommand) -> None:
    """Run the LLM strategies end to end and write their files (see the module docstring).

    One strategy writes into ``out``; several write each into ``out/STRATEGY/`` and
    the combined report and plot into ``out``.
    """
    from shieldbench.attacks import build_attacker
    from shieldbench.reports import write_llm_reports

    try:
        plans = _checked(cmd)
    except BaseException:
        close_plan(cmd.plan)
        raise
    store = None if cmd.no_store else open_cli_store(cmd.db)
    data = load_dataset(cmd.data_spec)
    attacker = build_attacker(cmd.opts.attacker or "")  # checked: not None
    evaluator = None if cmd.opts.evaluator is None else build_attacker(cmd.opts.evaluator)
    built: list[Defense] = []
    results: list[LLMAttackResult] = []
    try:
        built += [build_defense(s) for s in (cmd.spec, *cmd.transfer)]
        for settings, folder in plans:
            result = _one(cmd, settings, folder, built, data, (attacker, evaluator))
            results.append(result)
            _write_one(result, folder)
    finally:
        _close(built, attacker, evaluator, cmd.plan)
    print_report_paths(write_llm_reports(results, cmd.out))
    record(store, [], source="attack", tags=dict(cmd.tags), attacks=[r.to_dict() for r in results])


def _close(
    built: list[Defense], attacker: Attacker, evaluator: Attacker | None, plan: EndToEnd | None
) -> None:
    try:
        close_every(built)
    finally:
        try:
            close_every(model for model in (attacker, evaluator) if model is not None)
        finally:
            close_plan(plan)


def _progress(o: TargetOutcome) -> None:
    state = "goal-preserving bypass" if o.preserved else "held"
    err_console.print(f"{o.sample_id}: {o.queries} queries, {state}", highlight=False)


def _write_one(result: LLMAttackResult, folder: Path) -> None:
    from shieldbench.attacks import format_asr

    path = folder / "llm_attack.json"
    write_text_atomic(path, json.dumps(result.to_dict(), indent=1) + "\n")
    u = result.usage
    console.print(
        f"{result.strategy}: static ASR {format_asr(result.static_asr)};"
        f" ASR {format_asr(result.asr)}; goal-preserving {format_asr(result.preserving_asr)};"
        f" {result.queries} queries; attacker {u.tokens} tokens, {u.failures} failed calls,"
        f" {u.unparseable} unparseable",
        highlight=False,
    )
    for name in ("llm_attack.json", "transcripts.jsonl"):
        console.print(f"{name:>17}: {folder / name}", highlight=False)
