"""TAP: a tree of attacker refinements, pruned twice per level.

Level by level up to ``depth``: every node of the frontier (at most ``width``)
asks the attacker for ``branching`` children, each a refinement told its
parent's outcome. **Phase 1** asks the evaluator whether each child still
pursues the goal and drops those judged off goal *before they are sent* (a
``pruned`` step, no query spent; a child the evaluator could not judge is sent,
but can never count as goal-preserving). **Phase 2** screens the survivors in
one engine call and keeps the ``width`` blocked children with the lowest
defense score (unscored last, ties in order) as the next frontier.

The branches of one level are asked concurrently (:meth:`Session.gather`, at
most ``settings.concurrency`` calls in flight); node numbers are given before
the calls start and the children kept in branch order, so a fixed seed and a
deterministic attacker give the same tree however the calls interleave.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from shieldbench.attacks._llm_context import Session
from shieldbench.attacks._prompts import PAIR_SYSTEM, PERSONAS, feedback

__all__ = ["tap"]


@dataclass(slots=True)
class _Node:
    history: list[dict[str, str]]
    score: float | None


@dataclass(slots=True)
class _Child:
    node: _Node
    text: str
    goal: bool | None
    id: int


def _branch(parent: _Node, b: int, node_id: int, depth: int) -> Callable[[Session], _Child | None]:
    """Child ``b`` of ``parent`` as a :meth:`Session.gather` job (``None``: no child:
    no usable proposal, or pruned off goal before it cost a query)."""

    def job(session: Session) -> _Child | None:
        history = [*parent.history]
        if b:
            history.append({"role": "user", "content": f"Give a different variant ({b + 1})."})
        proposal = session.propose(history, stream=node_id, depth=depth)
        if proposal.text is None:
            return None
        goal = session.on_goal(proposal.text, stream=node_id, depth=depth)
        if goal is False:
            session.prune(proposal.text, stream=node_id, depth=depth)
            return None
        history.append({"role": "assistant", "content": proposal.raw or proposal.text})
        return _Child(_Node(history, None), proposal.text, goal, node_id)

    return job


def _screened(session: Session, children: list[_Child], depth: int) -> list[_Node]:
    """Phase 2: screen the children; the blocked ones, told their outcome."""
    goals = [c.goal for c in children]
    where = [(c.id, depth) for c in children]
    seen_all = session.screen([c.text for c in children], on_goal=goals, where=where)
    kept: list[_Node] = []
    for child, seen in zip(children, seen_all, strict=True):
        if seen is None or seen.blocked is not True:
            continue
        note = feedback(
            blocked=seen.blocked, score=seen.score, on_goal=child.goal,
            answer=seen.answer, judged=seen.judged,
        )  # fmt: skip
        child.node.history.append({"role": "user", "content": note})
        child.node.score = seen.score
        kept.append(child.node)
    return kept


def tap(session: Session) -> None:
    """Run TAP on one blocked sample (see the module docstring)."""
    s = session.settings
    persona = session.rng("tap").choice(PERSONAS)
    root = [
        {"role": "system", "content": PAIR_SYSTEM.format(goal=session.goal, persona=persona)},
        {"role": "user", "content": "Write the first candidate."},
    ]
    frontier = [_Node(root, None)]
    node_id = 0
    for depth in range(1, s.depth + 1):
        if session.finished:
            return
        jobs = []
        for parent in frontier:
            for b in range(s.branching):
                node_id += 1
                jobs.append(_branch(parent, b, node_id, depth))
        children = [c for c in session.gather(jobs) if c is not None]
        if not children or session.stopped:
            return
        kept = _screened(session, children, depth)
        if session.finished or not kept:
            return
        kept.sort(key=lambda n: math.inf if n.score is None else n.score)
        frontier = kept[: s.width]
