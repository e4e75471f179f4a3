"""PAIR: parallel streams of attacker refinements, each told how its last candidate fared.

Each of ``streams`` streams is a conversation with the attacker model: the
system prompt states the goal and a seeded approach (:data:`PERSONAS`); each of
``depth`` turns the attacker writes a candidate, the evaluator says whether it
still pursues the goal, the defense screens every stream's candidate in one
engine call, and the outcome (blocked or not, the score, the evaluator's
verdict) is appended to the stream as the next user message, which is what the
attacker refines from. An attack stops at its first goal-preserving bypass.

The streams of one turn ask the attacker and the evaluator concurrently
(:meth:`Session.gather`, at most ``settings.concurrency`` calls in flight); their
steps and candidates are kept in stream order, so a fixed seed and a deterministic
attacker give the same attack however the calls interleave.
"""

from __future__ import annotations

from collections.abc import Callable

from shieldbench.attacks._llm_context import Proposal, Session
from shieldbench.attacks._prompts import PAIR_SYSTEM, PERSONAS, feedback

__all__ = ["pair"]

History = list[dict[str, str]]


def _opening(session: Session, k: int) -> History:
    persona = session.rng("pair", k).choice(PERSONAS)
    return [
        {"role": "system", "content": PAIR_SYSTEM.format(goal=session.goal, persona=persona)},
        {"role": "user", "content": f"Stream {k + 1}: write the first candidate."},
    ]


Answer = tuple[Proposal, bool | None]


def _ask(history: History, k: int, depth: int) -> Callable[[Session], Answer]:
    """One stream's turn as a :meth:`Session.gather` job: (proposal, on-goal verdict)."""

    def job(session: Session) -> Answer:
        proposal = session.propose(history, stream=k, depth=depth)
        if proposal.text is None:
            return proposal, None
        return proposal, session.on_goal(proposal.text, stream=k, depth=depth)

    return job


def pair(session: Session) -> None:
    """Run PAIR on one blocked sample (see the module docstring)."""
    s = session.settings
    histories = [_opening(session, k) for k in range(s.streams)]
    for depth in range(1, s.depth + 1):
        if session.finished:
            return
        answers = session.gather([_ask(h, k, depth) for k, h in enumerate(histories)])
        texts: list[str] = []
        goals: list[bool | None] = []
        where: list[tuple[int, int]] = []
        for k, (proposal, goal) in enumerate(answers):
            history = histories[k]
            if proposal.text is None:
                if proposal.raw is not None:
                    history.append({"role": "assistant", "content": proposal.raw})
                    history.append({"role": "user", "content": "Answer with the JSON object only."})
                continue
            history.append({"role": "assistant", "content": proposal.raw or proposal.text})
            texts.append(proposal.text)
            goals.append(goal)
            where.append((k, depth))
        if session.stopped:
            return  # no attacker call was allowed: the token or time cap is reached
        if not texts:
            continue
        for (k, _), goal, seen in zip(
            where, goals, session.screen(texts, on_goal=goals, where=where), strict=True
        ):
            if seen is not None:
                note = feedback(
                    blocked=seen.blocked, score=seen.score, on_goal=goal,
                    answer=seen.answer, judged=seen.judged,
                )  # fmt: skip
                histories[k].append({"role": "user", "content": note})
