"""The Markdown report of LLM-driven attacks, beside the mutator search at equal budget.

Its own file (``llm_attack.md``) so that the shared report renderers are left
alone. Sections: the headline figures of each strategy (static, any-bypass and
goal-preserving ASR with Wilson 95% intervals, queries, attacker tokens and
estimated cost, failures, the budget that stopped it), ASR against queries, the
mutator search given the same number of queries, the transfer of the
goal-preserving bypasses to other defenses, and the best transcripts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from shieldbench.attacks._llm_attack import LLMAttackResult
from shieldbench.attacks._report import format_asr
from shieldbench.attacks._result import AttackResult
from shieldbench.defenses import Defense
from shieldbench.engine import screen
from shieldbench.metrics import Rate, rate
from shieldbench.types import RunConfig

__all__ = ["LLMTransfer", "llm_report_markdown", "llm_transfer"]


@dataclass(frozen=True, slots=True)
class LLMTransfer:
    """Goal-preserving bypasses of one attack replayed against another defense."""

    defense: str
    evaded: Rate
    errors: int


def llm_transfer(
    result: LLMAttackResult, defense: Defense, *, spec: str, config: RunConfig
) -> LLMTransfer:
    """Replay ``result``'s goal-preserving bypasses against ``defense`` (errors not evaded)."""
    texts = [o.preserving_text for o in result.outcomes if o.preserving_text is not None]
    outcomes = screen(defense, texts, config=config) if texts else []
    evaded = sum(1 for o in outcomes if o.verdict is not None and not o.verdict.blocked)
    return LLMTransfer(spec, rate(evaded, len(texts)), sum(1 for o in outcomes if not o.is_ok))


def _headline(r: LLMAttackResult) -> list[str]:
    u = r.usage
    cost = f"{r.cost:.4f}" if any(r.settings.price_per_mtok) else "no price given"
    return [
        f"| {r.strategy} | {format_asr(r.static_asr)} | {format_asr(r.asr)}"
        f" | {format_asr(r.preserving_asr)} | {r.queries} of {r.settings.budget.queries}"
        f" | {u.tokens} ({u.tokens_estimated} calls estimated) | {cost}"
        f" | {u.calls} calls, {u.failures} failed, {u.unparseable} unparseable"
        f" | {r.stopped_by or '–'} |"
    ]


def _curve(r: LLMAttackResult) -> list[str]:
    rows = [f"### {r.strategy}: ASR against queries", "", "| queries | ASR | goal-preserving |"]
    rows.append("|---:|---|---|")
    rows += [
        f"| {p.queries} | {format_asr(p.asr)} | {format_asr(p.preserving_asr)} |" for p in r.curve
    ]
    return [*rows, ""]


def _best(r: LLMAttackResult, n: int) -> list[str]:
    won = sorted(
        (o for o in r.outcomes if o.preserving_index is not None),
        key=lambda o: (o.queries, o.sample_id),
    )[:n]
    rows = [f"### {r.strategy}: best transcripts", ""]
    if not won:
        return [*rows, "No goal-preserving bypass.", ""]
    for o in won:
        rows.append(f"- **{o.sample_id}** ({o.category}): bypassed at query {o.preserving_index},"
                    f" step {o.turn}, {o.queries} queries on it")  # fmt: skip
        for s in o.steps:
            text = (s.text or s.error or s.raw or "").replace("\n", " ")[:160]
            seen = {True: "blocked", False: "let through", None: "–"}[s.blocked]
            rows.append(f"  - {s.kind} [{s.stream}.{s.depth}] {seen}, on goal {s.on_goal}: {text}")
    return [*rows, ""]


def llm_report_markdown(
    results: Sequence[LLMAttackResult],
    *,
    mutator: Mapping[str, AttackResult] | None = None,
    transfer: Mapping[str, Sequence[LLMTransfer]] | None = None,
    best: int = 3,
) -> str:
    """The report (see the module docstring); ``mutator`` and ``transfer`` by strategy."""
    lines = [
        "# LLM-driven adaptive attacks",
        "",
        "ASRs with Wilson 95% intervals. *Goal-preserving* counts only bypasses the"
        " evaluator judged to still pursue the original attack: quote that one.",
        "",
        "| strategy | static ASR | ASR (any bypass) | goal-preserving ASR | queries"
        " | attacker tokens | est. cost | attacker calls | stopped by |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines += _headline(r)
    lines.append("")
    for r in results:
        lines += _curve(r)
    if mutator:
        lines += ["## Mutator search at equal budget", ""]
        lines.append("| LLM strategy | queries | its goal-preserving ASR | mutator search"
                     " (same queries) ASR | its payload-preserving ASR |")  # fmt: skip
        lines.append("|---|---:|---|---|---|")
        for r in results:
            m = mutator.get(r.strategy)
            if m is not None:
                lines.append(
                    f"| {r.strategy} | {r.queries} | {format_asr(r.preserving_asr)}"
                    f" | {format_asr(m.figures.adaptive_asr)} ({m.meta.strategy})"
                    f" | {format_asr(m.figures.preserving_asr)} |"
                )
        lines.append("")
    if transfer:
        lines += ["## Transfer of goal-preserving bypasses", ""]
        lines += ["| strategy | to defense | evaded | errors |", "|---|---|---|---:|"]
        for strategy, rows in transfer.items():
            lines += [f"| {strategy} | {t.defense} | {format_asr(t.evaded)} | {t.errors} |"
                      for t in rows]  # fmt: skip
        lines.append("")
    for r in results:
        lines += _best(r, best)
    return "\n".join(lines)
