"""``shieldbench attack --strategy pair|tap|crescendo --attacker SPEC``: the LLM-driven attacks.

Called by ``attack`` when the strategy is one of :data:`LLM_STRATEGIES`. Writes
``llm_attack.json`` (the result), ``transcripts.jsonl`` (one finished attack per
line; ``--resume`` reads it back and goes on) and ``llm_attack.md`` (the report,
with the mutator search at the same number of queries when
``--compare-mutators`` is given, and the transfer to ``--transfer`` defenses) and
``llm_asr.svg`` (ASR against queries, every strategy on one plot with its interval
band). ``--strategy pair,tap,crescendo`` runs several, each into its own folder,
reported together. With ``--target`` (and ``--judge``), PAIR and TAP send the
candidates the defense lets through to the model and tell the attacker its answer
and the judges' verdict; Crescendo's turns are answered by it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench.cli._app import console, err_console
from shieldbench.cli._e2e import close_plan
from shieldbench.datasets import load_dataset
from shieldbench.defenses import Defense, build_defense, close_every
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

if TYPE_CHECKING:
    from shieldbench.attacks import LLMAttackResult, TargetOutcome
    from shieldbench.engine import EndToEnd

__all__ = ["LLMOptions", "run_llm_command"]


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


def run_llm_command(
    *,
    strategies: list[str],
    spec: str,
    data_spec: str,
    out: Path,
    budget: int,
    seed: int,
    max_attacks: int | None,
    transfer: list[str],
    config: RunConfig,
    plan: EndToEnd | None,
    opts: LLMOptions,
) -> None:
    """Run the LLM strategies end to end and write their files (see the module docstring).

    One strategy writes into ``out``; several write each into ``out/STRATEGY/`` and
    the combined report and plot into ``out``.
    """
    from shieldbench.attacks import (
        AttackResult,
        AttackSettings,
        Budget,
        LLMSettings,
        LLMTransfer,
        asr_plot_svg,
        build_attacker,
        llm_report_markdown,
        llm_transfer,
        run_attack,
        run_llm_attack,
    )

    if opts.attacker is None:
        raise ConfigError(
            f"--strategy {','.join(strategies)} needs --attacker SPEC (a chat endpoint, e.g."
            " llm:ollama/llama3.2 or openai:MODEL@http://127.0.0.1:8000/v1)"
        )
    plans = []
    for strategy in strategies:
        folder = out if len(strategies) == 1 else out / strategy
        settings = LLMSettings(
            strategy,  # type: ignore[arg-type]  # checked by the caller
            budget=Budget(budget, opts.token_budget, opts.time_budget),
            seed=seed, streams=opts.streams, depth=opts.depth, width=opts.width,
            branching=opts.branching, turns=opts.turns, backtracks=opts.backtracks,
            screen=opts.screen, max_attacks=max_attacks, price_per_mtok=_prices(opts.price),
        )  # fmt: skip
        transcripts = folder / "transcripts.jsonl"
        if transcripts.exists() and not opts.resume:
            raise ConfigError(f"{transcripts} exists: pass --resume to go on from it, or remove it")
        plans.append((settings, folder))
    data = load_dataset(data_spec)
    attacker = build_attacker(opts.attacker)
    evaluator = None if opts.evaluator is None else build_attacker(opts.evaluator)
    built: list[Defense] = [build_defense(spec)]
    results: list[LLMAttackResult] = []
    mutator: dict[str, AttackResult] = {}
    moved: dict[str, list[LLMTransfer]] = {}
    try:
        others = {o: build_defense(o) for o in transfer}
        built += others.values()
        for settings, folder in plans:
            folder.mkdir(parents=True, exist_ok=True)
            result = run_llm_attack(
                built[0], data, attacker, settings=settings, evaluator=evaluator,
                end_to_end=plan, config=config, defense_spec=spec,
                transcripts=folder / "transcripts.jsonl", on_target=_progress,
            )  # fmt: skip
            results.append(result)
            _write_one(result, folder)
            if opts.compare_mutators and result.queries:
                same = AttackSettings(budget=result.queries, seed=seed, max_attacks=max_attacks)
                mutator[result.strategy] = run_attack(built[0], data, settings=same, config=config)
            moved[result.strategy] = [
                llm_transfer(result, d, spec=s, config=config) for s, d in others.items()
            ]
    finally:
        close_every(built)
        for model in (attacker, evaluator):
            if model is not None:
                model.close()
        close_plan(plan)
    report = llm_report_markdown(results, mutator=mutator, transfer=moved if transfer else None)
    (out / "llm_attack.md").write_text(report, encoding="utf-8")
    (out / "llm_asr.svg").write_text(asr_plot_svg(results, mutator=mutator), encoding="utf-8")
    for name in ("llm_attack.md", "llm_asr.svg"):
        console.print(f"{name:>17}: {out / name}", highlight=False)


def _progress(o: TargetOutcome) -> None:
    state = "goal-preserving bypass" if o.preserved else "held"
    err_console.print(f"{o.sample_id}: {o.queries} queries, {state}", highlight=False)


def _write_one(result: LLMAttackResult, folder: Path) -> None:
    from shieldbench.attacks import format_asr

    path = folder / "llm_attack.json"
    path.write_text(json.dumps(result.to_dict(), indent=1), encoding="utf-8")
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
