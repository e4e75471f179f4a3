"""The Markdown report of LLM-driven attacks (PAIR, TAP, Crescendo), one or several.

Rendered from the attack records alone (:class:`~shieldbench.attacks.LLMAttackResult`,
with the transfer and the mutator comparison inside), so ``shieldbench report
llm_attack.json ...`` renders a stored attack exactly as ``shieldbench attack``
did. Sections: the headline figures of each strategy (static, any-bypass and
goal-preserving ASR with Wilson 95% intervals, queries, attacker tokens and
estimated cost, failures, the budget that stopped it), ASR against queries, where
the defense failed (the Crescendo turn, or the PAIR / TAP refinement, of each
goal-preserving bypass), the mutator search given the same number of queries, the
transfer of the bypasses to other defenses, and the best transcripts. Every value
from the data goes through :func:`md_text` / :func:`md_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shieldbench._textio import write_text_atomic
from shieldbench.reports._format import DASH, rate_text
from shieldbench.reports._mdescape import Md, md_table, md_text

if TYPE_CHECKING:
    from shieldbench.attacks import LLMAttackResult, TargetOutcome
    from shieldbench.metrics import Rate

__all__ = ["FailureSteps", "llm_attack_markdown", "llm_failure_steps", "write_llm_reports"]


def _asr(r: Rate) -> Md:
    return Md(f"{rate_text(r, n=False)} ({r.k}/{r.n})")


def _cost(r: LLMAttackResult) -> str:
    if not any(r.settings.price_per_mtok):
        return "no price given"
    prompt, completion = r.settings.price_per_mtok
    return f"{r.cost:.4f} (at {prompt:g} / {completion:g} per M tokens)"


def _headline(results: Sequence[LLMAttackResult]) -> list[str]:
    rows: list[list[str | Md]] = []
    for r in results:
        u = r.usage
        rows.append(
            [
                r.strategy,
                _asr(r.static_asr),
                _asr(r.asr),
                _asr(r.preserving_asr),
                Md(f"{r.queries} of {r.settings.budget.queries}"),
                Md(
                    f"{u.tokens} ({u.prompt_tokens} prompt, {u.completion_tokens} completion;"
                    f" {u.tokens_estimated} calls estimated)"
                ),
                Md(_cost(r)),
                Md(f"{u.calls} calls, {u.failures} failed, {u.unparseable} unparseable"),
                r.stopped_by or DASH,
            ]
        )
    headers = ["Strategy", "Static ASR", "ASR (any bypass)", "Goal-preserving ASR", "Queries"]
    return [
        md_table([*headers, "Attacker tokens", "Est. cost", "Attacker calls", "Stopped by"], rows),
        "",
    ]


def _curve(r: LLMAttackResult) -> list[str]:
    rows: list[list[str | Md]] = [
        [Md(str(p.queries)), _asr(p.asr), _asr(p.preserving_asr)] for p in r.curve
    ]
    return [
        f"### {md_text(r.strategy)}: ASR against queries",
        "",
        md_table(["Queries", "ASR", "Goal-preserving ASR"], rows),
        "",
    ]


@dataclass(frozen=True, slots=True)
class FailureSteps:
    """Where the defense failed in one LLM attack: ``label`` names the step
    (``Turn`` for Crescendo, ``Refinement`` for PAIR and TAP), ``counts`` the attacks
    bypassed (goal kept) at each, in step order, and ``held`` those never bypassed
    with the goal kept. The Markdown report and the viewer both show it."""

    label: str
    counts: tuple[tuple[int, int], ...]
    held: int


def llm_failure_steps(r: LLMAttackResult) -> FailureSteps:
    """Goal-preserving bypasses by turn (Crescendo) or refinement depth (PAIR, TAP)."""
    counts: dict[int, int] = {}
    for o in r.outcomes:
        if o.turn is not None:
            counts[o.turn] = counts.get(o.turn, 0) + 1
    return FailureSteps(
        "Turn" if r.strategy == "crescendo" else "Refinement",
        tuple(sorted(counts.items())),
        sum(1 for o in r.outcomes if o.turn is None),
    )


def _turns(r: LLMAttackResult) -> list[str]:
    """Where the defense failed (:func:`llm_failure_steps`), as a table."""
    failed = llm_failure_steps(r)
    rows: list[list[str | Md]] = [[Md(str(t)), Md(str(n))] for t, n in failed.counts]
    rows.append(["held (no goal-preserving bypass)", Md(str(failed.held))])
    return [
        f"### {md_text(r.strategy)}: where the defense failed",
        "",
        md_table([failed.label, "Attacks bypassed there (goal kept)"], rows),
        "",
    ]


def _comparison(results: Sequence[LLMAttackResult]) -> list[str]:
    rows: list[list[str | Md]] = []
    for r in results:
        m = r.comparison
        if m is not None:
            rows.append(
                [
                    r.strategy,
                    Md(str(r.queries)),
                    _asr(r.preserving_asr),
                    Md(
                        f"{_asr(m.figures.adaptive_asr).text} ({md_text(m.meta.strategy)},"
                        f" {m.counts.search_queries} queries)"
                    ),
                    _asr(m.figures.preserving_asr),
                ]
            )
    if not rows:
        return []
    return [
        "## Mutator search at equal budget",
        "",
        "The mutator search (`shieldbench attack --strategy auto`) given as many defense"
        " queries as the LLM strategy spent, on the same attacks and seed. Compare the"
        " goal-preserving ASR with the payload-preserving one: both count only bypasses"
        " that still carry the attack.",
        "",
        md_table(
            [
                "LLM strategy",
                "Queries",
                "Its goal-preserving ASR",
                "Mutator search ASR",
                "Mutator payload-preserving ASR",
            ],
            rows,
        ),
        "",
    ]


def _transfer(results: Sequence[LLMAttackResult]) -> list[str]:
    rows: list[list[str | Md]] = [
        [
            r.strategy,
            t.defense.spec,
            Md(str(t.replayed)),
            _asr(t.evaded),
            _asr(t.preserving_evaded),
            _asr(t.original_asr),
            Md(str(t.errors)),
        ]
        for r in results
        for t in r.transfer
    ]
    if not rows:
        return []
    return [
        "## Transfer of the bypasses to other defenses",
        "",
        "One text per bypassed attack (its goal-preserving bypass when there is one)"
        " replayed against each defense; *originals* is the same attacks unmodified.",
        "",
        md_table(
            [
                "Strategy",
                "To defense",
                "Replayed",
                "Evaded",
                "Goal-preserving evaded",
                "ASR of originals",
                "Errors",
            ],
            rows,
        ),
        "",
    ]


def _transcript(o: TargetOutcome, text_limit: int) -> list[str]:
    lines = [
        f"- **{md_text(o.sample_id)}** ({md_text(o.category)}): bypassed at query"
        f" {o.preserving_index}, step {o.turn}, {o.queries} queries on it"
    ]
    for s in o.steps:
        text = (s.text or s.error or s.raw or "").replace("\n", " ")[:text_limit]
        seen = {True: "blocked", False: "let through", None: DASH}[s.blocked]
        lines.append(
            f"  - {md_text(s.kind)} [{s.stream}.{s.depth}] {seen}, on goal {s.on_goal}:"
            f" {md_text(text)}"
        )
    return lines


def _best(r: LLMAttackResult, n: int, text_limit: int) -> list[str]:
    won = sorted(
        (o for o in r.outcomes if o.preserving_index is not None),
        key=lambda o: (o.queries, o.sample_id),
    )[:n]
    lines = [f"### {md_text(r.strategy)}: best transcripts", ""]
    if not won:
        return [*lines, "No goal-preserving bypass.", ""]
    for o in won:
        lines += _transcript(o, text_limit)
    return [*lines, ""]


def llm_attack_markdown(
    results: Sequence[LLMAttackResult], *, best: int = 3, text_limit: int = 160
) -> str:
    """The report (see the module docstring): ``best`` transcripts per strategy, the
    fewest queries first, each step's text cut to ``text_limit`` characters."""
    lines = [
        "# LLM-driven adaptive attacks",
        "",
        "ASRs with Wilson 95% intervals (k/n). *Goal-preserving* counts only bypasses the"
        " evaluator judged to still pursue the original attack: quote that one.",
        "",
        *_headline(results),
    ]
    for r in results:
        lines += _curve(r)
        lines += _turns(r)
    lines += _comparison(results)
    lines += _transfer(results)
    for r in results:
        lines += _best(r, best, text_limit)
    return "\n".join(lines)


def write_llm_reports(results: Sequence[LLMAttackResult], out: Path) -> dict[str, Path]:
    """Write ``llm_attack.md`` and ``llm_asr.svg`` (every strategy on one plot) into ``out``."""
    from shieldbench.reports._llm_plot import llm_asr_svg

    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / "llm_attack.md", "svg": out / "llm_asr.svg"}
    write_text_atomic(paths["md"], llm_attack_markdown(results) + "\n")
    write_text_atomic(paths["svg"], llm_asr_svg(results))
    return paths
