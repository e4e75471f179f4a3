"""``run``'s options as ``Annotated`` types, so the command's signature stays readable.

Each alias carries its flag and help text; ``None`` as a default means "not given"
(the config file's, the resumed benchmark's or :class:`~shieldbench.types.RunConfig`'s
value is used), which the help shows as the default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shieldbench.types import ERROR_POLICIES, RunConfig

__all__ = [
    "BatchSizeOption",
    "ConcurrencyOption",
    "ConfigOption",
    "DatasetsOption",
    "DefensesOption",
    "ErrorPolicyOption",
    "JudgeAccuracyOption",
    "JudgeRuleOption",
    "JudgesOption",
    "LatencySampleOption",
    "MarginOption",
    "MaxErrorRateOption",
    "MaxFprOption",
    "OutOption",
    "OutputDefensesOption",
    "ResumeOption",
    "RetriesOption",
    "ScreenOption",
    "SystemPromptOption",
    "TargetOption",
    "TimeoutOption",
    "WarmupOption",
]

_DEFAULTS = RunConfig()

DefensesOption = Annotated[
    list[str] | None, typer.Option("--defense", "-d", help="Defense spec (repeatable).")
]
DatasetsOption = Annotated[
    list[str] | None, typer.Option("--dataset", "-D", help="Dataset spec (repeatable).")
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="YAML benchmark config file (its relative paths: to the file)."
    ),
]
OutOption = Annotated[
    Path | None, typer.Option(help="Report folder (default reports/<benchmark id>/).")
]
ResumeOption = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue the interrupted benchmark in --out (its specs and settings"
        " are read from DIR/benchmark.json).",
    ),
]
ErrorPolicyOption = Annotated[
    str | None,
    typer.Option(
        help=f"How errors count: {', '.join(ERROR_POLICIES)}.",
        show_default=_DEFAULTS.error_policy,
    ),
]
TimeoutOption = Annotated[
    float | None,
    typer.Option(
        help="Time limit per text in seconds (a batch of n texts gets n times it).",
        show_default=f"{_DEFAULTS.timeout_s:g}",
    ),
]
ConcurrencyOption = Annotated[
    int | None, typer.Option(help="Calls in flight.", show_default=str(_DEFAULTS.concurrency))
]
RetriesOption = Annotated[
    int | None,
    typer.Option(help="Retries of transient errors.", show_default=str(_DEFAULTS.retries)),
]
WarmupOption = Annotated[
    int | None,
    typer.Option(help="Warm-up calls, not timed.", show_default=str(_DEFAULTS.warmup)),
]
BatchSizeOption = Annotated[
    int | None,
    typer.Option(help="Texts per batch call.", show_default=str(_DEFAULTS.batch_size)),
]
LatencySampleOption = Annotated[
    int | None,
    typer.Option(
        help="Texts of a batched run timed one per call (per-call latency; seeded; 0: none).",
        show_default=str(_DEFAULTS.latency_sample),
    ),
]
MarginOption = Annotated[
    float | None,
    typer.Option(help="Warn when a category is too small for this margin.", show_default="0.1"),
]
MaxFprOption = Annotated[
    float | None,
    typer.Option(help="Your policy, FPR at most this (e.g. 0.02), drawn in the reports."),
]
TargetOption = Annotated[
    str | None,
    typer.Option(
        help="End to end: the model behind the defense (openai:MODEL@URL, llm:..., python:...)."
    ),
]
JudgesOption = Annotated[
    list[str] | None,
    typer.Option(
        "--judge",
        help="End to end: judge of success (repeatable):"
        " refusal, leak, secrets, pii, llm-judge:..., python:...",
    ),
]
JudgeRuleOption = Annotated[
    str, typer.Option(help="How several judges combine: any, all, majority.")
]
OutputDefensesOption = Annotated[
    list[str] | None,
    typer.Option(help="End to end: defense screening the answer (e.g. leak, secrets)."),
]
SystemPromptOption = Annotated[
    str | None,
    typer.Option(
        help="End to end: system prompt text or @FILE; {canary} is replaced by the"
        " run's canary (default: a support-bot prompt with a canary)."
    ),
]
ScreenOption = Annotated[
    str,
    typer.Option(
        help="What the defense screens of a conversation:"
        " text, last_user, user_turns, tool_results, all."
    ),
]
JudgeAccuracyOption = Annotated[
    Path | None,
    typer.Option(
        help="JSON of 'shieldbench judges evaluate --json': adds the Rogan-Gladen corrected ASR."
    ),
]
MaxErrorRateOption = Annotated[
    float,
    typer.Option(
        help="Exit 1 (after writing everything) when a run's share of failed calls"
        " (errors + timeouts) is above this."
    ),
]
