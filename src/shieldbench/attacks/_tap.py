"""TAP: a tree of attacker refinements, pruned twice per level.

Level by level up to ``depth``: every node of the frontier (at most ``width``)
asks the attacker for ``branching`` children, each a refinement told its
parent's outcome. **Phase 1** asks the evaluator whether each child still
pursues the goal and drops those judged off goal *before they are sent* (a
``pruned`` step, no query spent; a child the evaluator could not judge is sent,
but can never count as goal-preserving). **Phase 2** screens the survivors in
one engine call and keeps the ``width`` blocked children with the lowest
defense score (unscored last, ties in order) as the next frontier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shieldbench.attacks._llm_context import Session
from shieldbench.attacks._prompts import PAIR_SYSTEM, PERSONAS, feedback

__all__ = ["tap"]


@dataclass(slots=True)
class _Node:
    history: list[dict[str, str]]
    score: float | None


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
        children: list[tuple[_Node, str, bool | None, int]] = []
        for parent in frontier:
            for b in range(s.branching):
                if session.finished:
                    break
                history = [*parent.history]
                if b:
                    history.append(
                        {"role": "user", "content": f"Give a different variant ({b + 1})."}
                    )
                node_id += 1
                proposal = session.propose(history, stream=node_id, depth=depth)
                if proposal.text is None:
                    continue
                goal = session.on_goal(proposal.text, stream=node_id, depth=depth)
                if goal is False:
                    session.prune(proposal.text, stream=node_id, depth=depth)
                    continue
                history.append({"role": "assistant", "content": proposal.raw or proposal.text})
                children.append((_Node(history, None), proposal.text, goal, node_id))
        if not children or session.finished:
            return
        texts = [c[1] for c in children]
        goals = [c[2] for c in children]
        where = [(c[3], depth) for c in children]
        kept: list[_Node] = []
        for (node, _, goal, _), seen in zip(
            children, session.screen(texts, on_goal=goals, where=where), strict=True
        ):
            if seen is None or seen.blocked is not True:
                continue
            note = feedback(
                    blocked=seen.blocked, score=seen.score, on_goal=goal,
                    answer=seen.answer, judged=seen.judged,
                )  # fmt: skip
            node.history.append({"role": "user", "content": note})
            node.score = seen.score
            kept.append(node)
        if session.finished or not kept:
            return
        kept.sort(key=lambda n: math.inf if n.score is None else n.score)
        frontier = kept[: s.width]
