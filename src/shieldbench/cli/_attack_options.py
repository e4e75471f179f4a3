"""The options of ``shieldbench attack``, named once (typer ``Annotated`` aliases).

Kept apart so that the command itself (:mod:`shieldbench.cli._attack`) reads as
what it does: options -> settings -> the search or the LLM strategies -> files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shieldbench.types import ERROR_POLICIES

# shieldbench.attacks.STRATEGIES, copied so that registering the options (every start,
# ``--help`` included) does not load the attack package; tests/test_startup.py checks
# that the two agree.
STRATEGIES = ("auto", "greedy", "beam", "random")

__all__ = [
    "AttackerOpt", "BacktracksOpt", "BatchSizeOpt", "BeamWidthOpt", "BranchingOpt", "BudgetOpt",
    "CompareOpt", "ConcurrencyOpt", "DatasetOpt", "DefenseOpt", "DepthOpt", "ErrorPolicyOpt",
    "EvaluatorOpt", "ExamplesOpt", "JudgeOpt", "JudgeRuleOpt", "MaxAttacksOpt", "MaxDepthOpt",
    "MutatorsOpt", "OutOpt", "OutputDefenseOpt", "PriceOpt", "ResumeOpt", "RetriesOpt",
    "RoundsOpt", "ScreenOpt", "SeedOpt", "StrategyOpt", "StreamsOpt", "SystemPromptOpt",
    "TargetOpt", "TimeBudgetOpt", "TimeoutOpt", "TokenBudgetOpt", "TransferOpt", "TurnsOpt",
    "WidthOpt",
]  # fmt: skip

DefenseOpt = Annotated[
    list[str] | None,
    typer.Option("--defense", "-d", help="Defense spec to attack (one; required)."),
]
DatasetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--dataset", "-D", help="Dataset spec; its attack samples are used (one; required)."
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option(help="Report folder (attack.json, bypasses.jsonl, report.*; required)."),
]
BudgetOpt = Annotated[
    int, typer.Option(min=0, help="Search queries allowed (static pass not counted).")
]
RoundsOpt = Annotated[int, typer.Option(min=1, help="Search rounds.")]
SeedOpt = Annotated[int, typer.Option(help="Random seed (same seed, same attack).")]
MutatorsOpt = Annotated[
    str | None,
    typer.Option(
        "--mutators", help="Comma-separated mutators, a+b chains or families (default: all)."
    ),
]
StrategyOpt = Annotated[
    str,
    typer.Option(
        help=f"Search: {', '.join(STRATEGIES)} (auto: beam if scored), or an LLM-driven"
        " pair, tap, crescendo (needs --attacker; comma-separate several)."
    ),
]
AttackerOpt = Annotated[
    str | None,
    typer.Option(help="pair/tap/crescendo: the attacker chat endpoint (openai:M@URL, llm:...)."),
]
EvaluatorOpt = Annotated[
    str | None, typer.Option(help="pair/tap/crescendo: on-goal evaluator (default: attacker).")
]
StreamsOpt = Annotated[int, typer.Option(min=1, help="pair: parallel streams.")]
DepthOpt = Annotated[int, typer.Option(min=1, help="pair/tap: refinements per stream.")]
WidthOpt = Annotated[int, typer.Option(min=1, help="tap: nodes kept per level.")]
BranchingOpt = Annotated[int, typer.Option(min=1, help="tap: children per node.")]
TurnsOpt = Annotated[int, typer.Option(min=1, help="crescendo: most turns.")]
BacktracksOpt = Annotated[int, typer.Option(min=0, help="crescendo: most backtracks.")]
ScreenOpt = Annotated[
    str, typer.Option("--screen", help="crescendo: what the defense screens (user_turns, all...).")
]
TokenBudgetOpt = Annotated[
    int | None, typer.Option(min=0, help="pair/tap/crescendo: attacker tokens allowed.")
]
TimeBudgetOpt = Annotated[
    float | None, typer.Option(help="pair/tap/crescendo: wall seconds allowed.")
]
PriceOpt = Annotated[
    str | None,
    typer.Option(help="Attacker PROMPT,COMPLETION price per million tokens (cost estimate)."),
]
CompareOpt = Annotated[
    bool,
    typer.Option("--compare-mutators", help="Also run the mutator search at the same queries."),
]
ResumeOpt = Annotated[
    bool, typer.Option("--resume", help="pair/tap/crescendo: go on from transcripts.jsonl.")
]
BeamWidthOpt = Annotated[int, typer.Option(min=1, help="Candidates kept by beam search.")]
MaxDepthOpt = Annotated[int, typer.Option(min=1, help="Longest mutation chain.")]
MaxAttacksOpt = Annotated[
    int | None, typer.Option(min=1, help="Attack samples to use (seeded subset).")
]
TransferOpt = Annotated[
    list[str] | None,
    typer.Option("--transfer", help="Replay the bypasses against this defense (repeatable)."),
]
ErrorPolicyOpt = Annotated[
    str, typer.Option(help=f"How static errors count: {', '.join(ERROR_POLICIES)}.")
]
TimeoutOpt = Annotated[float, typer.Option(help="Per-call timeout in seconds (0: no limit).")]
ConcurrencyOpt = Annotated[
    int, typer.Option(min=1, help="Calls in flight (defense; pair/tap: attacker calls too).")
]
RetriesOpt = Annotated[int, typer.Option(min=0, help="Retries of transient errors.")]
BatchSizeOpt = Annotated[int, typer.Option(min=1, help="Texts per batch call.")]
ExamplesOpt = Annotated[
    int,
    typer.Option(
        min=0, help="Example bypasses per attack category in report.md (HTML, JSON: more)."
    ),
]
TargetOpt = Annotated[
    str | None,
    typer.Option(
        "--target", help="End to end: send the bypasses to this model (openai:MODEL@URL...)."
    ),
]
JudgeOpt = Annotated[
    list[str] | None, typer.Option("--judge", help="End to end: judge (repeatable).")
]
JudgeRuleOpt = Annotated[str, typer.Option(help="any, all or majority.")]
OutputDefenseOpt = Annotated[
    list[str] | None,
    typer.Option("--output-defense", help="End to end: screen the answers (repeatable)."),
]
SystemPromptOpt = Annotated[
    str | None, typer.Option(help="End to end: system prompt text or @FILE.")
]
