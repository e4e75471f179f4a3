"""``shieldbench attack --strategy pair|tap|crescendo --attacker SPEC``: the LLM-driven attacks.

Called by ``attack`` when the strategy is one of :data:`LLM_STRATEGIES`. Writes
``llm_attack.json`` (the result), ``transcripts.jsonl`` (one finished attack per
line; ``--resume`` reads it back and goes on) and ``llm_attack.md`` (the report,
with the mutator search at the same number of queries when
``--compare-mutators`` is given, and the transfer to ``--transfer`` defenses).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from shieldbench.cli._app import console, err_console
from shieldbench.datasets import load_dataset
from shieldbench.defenses import Defense, build_defense
from shieldbench.errors import ConfigError
from shieldbench.types import RunConfig

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
    strategy: str,
    spec: str,
    data_spec: str,
    out: Path,
    budget: int,
    seed: int,
    max_attacks: int | None,
    transfer: list[str],
    config: RunConfig,
    target_spec: str | None,
    opts: LLMOptions,
) -> None:
    """Run one LLM strategy end to end and write its files (see the module docstring)."""
    from shieldbench.attacks import (
        AttackSettings,
        Budget,
        LLMSettings,
        build_attacker,
        format_asr,
        llm_report_markdown,
        llm_transfer,
        run_attack,
        run_llm_attack,
    )
    from shieldbench.targets import build_target

    if opts.attacker is None:
        raise ConfigError(
            f"--strategy {strategy} needs --attacker SPEC (a chat endpoint, e.g."
            " llm:ollama/llama3.2 or openai:MODEL@http://127.0.0.1:8000/v1)"
        )
    settings = LLMSettings(
        strategy,  # type: ignore[arg-type]  # checked by the caller
        budget=Budget(budget, opts.token_budget, opts.time_budget),
        seed=seed,
        streams=opts.streams,
        depth=opts.depth,
        width=opts.width,
        branching=opts.branching,
        turns=opts.turns,
        backtracks=opts.backtracks,
        screen=opts.screen,
        max_attacks=max_attacks,
        price_per_mtok=_prices(opts.price),
    )
    out.mkdir(parents=True, exist_ok=True)
    transcripts = out / "transcripts.jsonl"
    if transcripts.exists() and not opts.resume:
        raise ConfigError(f"{transcripts} exists: pass --resume to go on from it, or remove it")
    data = load_dataset(data_spec)
    attacker = build_attacker(opts.attacker)
    evaluator = None if opts.evaluator is None else build_attacker(opts.evaluator)
    target = None if target_spec is None else build_target(target_spec)
    built: list[Defense] = [build_defense(spec)]
    try:
        others = {o: build_defense(o) for o in transfer}
        built += others.values()
        result = run_llm_attack(
            built[0],
            data,
            attacker,
            settings=settings,
            evaluator=evaluator,
            target=target,
            config=config,
            defense_spec=spec,
            transcripts=transcripts,
            on_target=lambda o: err_console.print(
                f"{o.sample_id}: {o.queries} queries,"
                f" {'goal-preserving bypass' if o.preserved else 'held'}",
                highlight=False,
            ),
        )
        mutator = None
        if opts.compare_mutators and result.queries:
            same = AttackSettings(budget=result.queries, seed=seed, max_attacks=max_attacks)
            mutator = {strategy: run_attack(built[0], data, settings=same, config=config)}
        moved = {
            strategy: [llm_transfer(result, d, spec=s, config=config) for s, d in others.items()]
        }
    finally:
        for d in built:
            close = getattr(d, "close", None)
            if callable(close):
                close()
        for model in (attacker, evaluator):
            if model is not None:
                model.close()
    (out / "llm_attack.json").write_text(json.dumps(result.to_dict(), indent=1), encoding="utf-8")
    report = llm_report_markdown([result], mutator=mutator, transfer=moved if transfer else None)
    (out / "llm_attack.md").write_text(report, encoding="utf-8")
    console.print(
        f"{strategy}: static ASR {format_asr(result.static_asr)}; ASR {format_asr(result.asr)};"
        f" goal-preserving {format_asr(result.preserving_asr)}; {result.queries} queries;"
        f" attacker {result.usage.tokens} tokens, {result.usage.failures} failed calls,"
        f" {result.usage.unparseable} unparseable",
        highlight=False,
    )
    for name in ("llm_attack.json", "transcripts.jsonl", "llm_attack.md"):
        console.print(f"{name:>17}: {out / name}", highlight=False)
