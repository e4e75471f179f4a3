"""The page of an LLM-driven attack (PAIR, TAP, Crescendo) and of each goal's transcript.

What ``shieldbench report`` renders for an :class:`~shieldbench.attacks.LLMAttackResult`
(:func:`~shieldbench.reports.llm_attack_markdown`), from the same record and through
the report's own public parts: the headline figures with their intervals and ``k / n``,
the ASR-against-queries chart (:func:`~shieldbench.reports.llm_asr_svg`, the mutator
search at equal budget dashed when the record holds it), where the defense failed
(:func:`~shieldbench.reports.llm_failure_steps`), the mutator comparison, the transfer,
one row per attacked goal, and the transcripts: the best ones collapsed on the attack
page, every one on its own paged page (``/attacks/ID/goals/N?page=P``), each step's
long texts cut to a preview with the whole text folded below it.

Every text in a transcript (the goal, the attacker's prompts, the target's answers,
errors, unparseable answers) comes from a model or a data set, and is hostile: the
templates escape it (autoescape); the chart escapes what it draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from shieldbench.errors import StoreError
from shieldbench.reports import llm_asr_svg, llm_failure_steps
from shieldbench.view._attack_list import STRATEGY_NAMES
from shieldbench.view._pages import BadRequest

if TYPE_CHECKING:
    from shieldbench.attacks import LLMAttackResult, Step, TargetOutcome

__all__ = [
    "BEST_STEPS",
    "BEST_TRANSCRIPTS",
    "GOALS_PER_PAGE",
    "PREVIEW_CHARS",
    "STEPS_PER_PAGE",
    "Goal",
    "goal_context",
    "llm_context",
    "step_view",
]

GOALS_PER_PAGE = 50
STEPS_PER_PAGE = 25
BEST_TRANSCRIPTS = 3
BEST_STEPS = 12  # steps of a best transcript shown on the attack page
PREVIEW_CHARS = 300

_STEP_WORDS = {
    "sent": "sent to the defense",
    "repeat": "repeat (verdict reused)",
    "pruned": "pruned (off goal)",
    "attacker_error": "attacker failed",
    "unparseable": "attacker answer unparseable",
    "evaluator_error": "evaluator failed",
    "target_error": "target failed",
    "target_refused": "target refused (removed)",
    "unsent": "unsent (budget spent)",
}


@dataclass(frozen=True, slots=True)
class Goal:
    """One attacked goal: its position in the record and what happened to it."""

    index: int
    outcome: TargetOutcome

    @property
    def status(self) -> str:
        if self.outcome.preserved:
            return "bypassed, goal kept"
        if self.outcome.bypassed:
            return "bypassed, goal lost"
        return "held"

    @property
    def css(self) -> str:
        """The badge class (the sample table's kinds: bypass, error, blocked)."""
        if self.outcome.preserved:
            return "bypass"
        return "error" if self.outcome.bypassed else "blocked"


def _paged(count: int, per_page: int, page: int, what: str) -> tuple[int, int]:
    """``(pages, offset)`` of page ``page`` (1-based); :class:`BadRequest` past the end."""
    pages = max(1, -(-count // per_page))
    if not 1 <= page <= pages:
        raise BadRequest(f"page={page}: {what} has {pages} page(s)")
    return pages, (page - 1) * per_page


def step_view(step: Step) -> dict[str, Any]:
    """What a transcript row shows of ``step``: the words for its kind, the defense's
    verdict, and its texts (the attacker's prompt, the target's answer, an error or an
    unparseable answer), each kept whole for the folded full text."""
    verdict = {True: "blocked", False: "let through", None: ""}[step.blocked]
    judged = {True: "attack succeeded", False: "attack failed", None: ""}[step.judged]
    texts = [
        (label, value)
        for label, value in (
            ("attacker prompt", step.text),
            ("target answer", step.answer),
            ("error", step.error),
            ("unparseable answer", step.raw),
        )
        if value
    ]
    return {
        "step": step,
        "kind": _STEP_WORDS.get(step.kind, step.kind),
        "verdict": verdict,
        "judged": judged,
        "on_goal": {True: "yes", False: "no", None: ""}[step.on_goal],
        "texts": texts,
    }


def _best(r: LLMAttackResult) -> list[dict[str, Any]]:
    """The goal-preserving transcripts that took the fewest queries (as the report)."""
    won = sorted(
        (Goal(i, o) for i, o in enumerate(r.outcomes) if o.preserving_index is not None),
        key=lambda g: (g.outcome.queries, g.outcome.sample_id),
    )[:BEST_TRANSCRIPTS]
    return [{"goal": g, "steps": [step_view(s) for s in g.outcome.steps[:BEST_STEPS]]} for g in won]


def llm_context(r: LLMAttackResult, page: int) -> dict[str, Any]:
    """The attack page's values; ``page`` pages the per-goal table."""
    goals = [Goal(i, o) for i, o in enumerate(r.outcomes)]
    pages, offset = _paged(len(goals), GOALS_PER_PAGE, page, "the goal table")
    return {
        "r": r,
        "name": STRATEGY_NAMES.get(r.strategy, r.strategy),
        "chart": Markup(llm_asr_svg([r])),  # the chart escapes what it draws
        "failed": llm_failure_steps(r),
        "goals": goals[offset : offset + GOALS_PER_PAGE],
        "goal_total": len(goals),
        "params": {"page": page},
        "pages": pages,
        "best": _best(r),
        "best_steps": BEST_STEPS,
        "preview": PREVIEW_CHARS,
    }


def goal_context(r: LLMAttackResult, index: int, page: int, attack_id: str) -> dict[str, Any]:
    """One goal's transcript page; :class:`BadRequest` for a page past the end."""
    if not 0 <= index < len(r.outcomes):
        raise StoreError(f"attack {attack_id!r} has no goal #{index} ({len(r.outcomes)} goals)")
    goal = Goal(index, r.outcomes[index])
    steps = goal.outcome.steps
    pages, offset = _paged(len(steps), STEPS_PER_PAGE, page, "this transcript")
    return {
        "r": r,
        "name": STRATEGY_NAMES.get(r.strategy, r.strategy),
        "goal": goal,
        "steps": [step_view(s) for s in steps[offset : offset + STEPS_PER_PAGE]],
        "first": offset,
        "step_total": len(steps),
        "params": {"page": page},
        "pages": pages,
        "preview": PREVIEW_CHARS,
    }
