"""Crescendo: a multi-turn conversation that escalates toward the goal, backtracking when blocked.

Turn by turn (up to ``turns``), the attacker writes the next user turn given the
conversation so far; the evaluator says whether it asks for the goal itself; the
defense screens the conversation *as it would see it* (``screen``: the last
user turn, every user turn, every turn; :func:`shieldbench.targets.screened_text`).
A blocked turn is removed and the attacker told so (a backtrack, at most
``backtracks``); a turn let through stays, and the target model, when one is
given, answers it under the plan's system prompt; when a judge of the plan says
the model refused, the turn is removed too (a ``target_refused`` step and a
backtrack) (a failed answer is a ``target_error`` step and the
conversation goes on without it). The attack succeeds at the first turn let through that the
evaluator judges on goal: the report says at which turn the defense failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from shieldbench.attacks._llm_context import Session
from shieldbench.attacks._llm_records import Step
from shieldbench.attacks._prompts import CRESCENDO_SYSTEM, crescendo_turn
from shieldbench.judges import JudgeContext
from shieldbench.targets import Message, Target, screened_text
from shieldbench.types import Sample

__all__ = ["crescendo"]


def crescendo(session: Session, target: Target | None = None) -> None:
    """Run Crescendo on one blocked sample (see the module docstring)."""
    s = session.settings
    attacker = [
        {"role": "system", "content": CRESCENDO_SYSTEM.format(goal=session.goal, turns=s.turns)}
    ]
    conversation: list[dict[str, str]] = []
    backtracks = 0
    turn = 1
    refused = False
    branch = 0
    while turn <= s.turns and not session.finished:
        attacker.append({"role": "user", "content": crescendo_turn(turn, s.turns, refused=refused)})
        proposal = session.propose(attacker, stream=branch, depth=turn)
        if proposal.text is None:
            attacker.pop()
            return
        attacker.append({"role": "assistant", "content": proposal.raw or proposal.text})
        goal = session.on_goal(proposal.text, stream=branch, depth=turn)
        candidate = [*conversation, {"role": "user", "content": proposal.text}]
        text = _screened(session.sample, candidate, s.screen)
        seen = session.screen([text], on_goal=[goal], where=[(branch, turn)])[0]
        if seen is None or session.finished:
            return
        if seen.blocked is not False:
            backtracks += 1
            branch += 1
            refused = True
            if backtracks > s.backtracks:
                return
            continue
        refused = False
        if target is not None:
            answer = _answer(target, candidate, session)
            if answer is None:
                session.steps.append(
                    Step("target_error", branch, turn, error="the target model failed")
                )
            elif _refused(session, answer):
                session.steps.append(Step("target_refused", branch, turn, answer=answer[:2000]))
                backtracks += 1
                branch += 1
                refused = True
                if backtracks > s.backtracks:
                    return
                continue
            else:
                candidate.append({"role": "assistant", "content": answer})
        conversation = candidate
        turn += 1


def _screened(sample: Sample, messages: Sequence[Message], mode: str) -> str:
    last = messages[-1]["content"]
    probe = Sample(sample.id, last, "attack", messages=tuple(messages))
    return screened_text(probe, mode)  # type: ignore[arg-type]  # mode checked in LLMSettings


def _answer(target: Target, messages: Sequence[Message], session: Session) -> str | None:
    """The target's answer, or ``None`` when it failed (recorded, never made up)."""
    system = None if session.e2e is None else session.e2e.system_prompt
    head = [] if system is None else [{"role": "system", "content": system}]
    try:
        return target.generate([*head, *messages])
    except Exception:  # a target failure of any kind is part of the transcript
        return None


def _refused(session: Session, answer: str) -> bool:
    """Did a judge of the end-to-end plan say the target refused? (No judge: no.)"""
    if session.e2e is None or not session.e2e.judges:
        return False
    probe = Sample(session.sample.id, session.goal, "attack")
    context = JudgeContext(system_prompt=session.e2e.system_prompt, canary=session.e2e.canary)
    try:
        return any(j.judge(probe, answer, context).refused is True for j in session.e2e.judges)
    except Exception:  # a judge failure is no refusal; the turn stays
        return False
