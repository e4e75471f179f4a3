"""Build small :class:`~shieldbench.types.Run` records from rows, for examples and tests.

Not part of the public API. A row is ``(category, is_attack, blocked)`` or
``(category, is_attack, blocked, score)``; ``blocked=None`` makes an error outcome
(``"error"`` status, error type ``RuntimeError``), ``blocked="timeout"`` a timeout.

Example:
    >>> run = make_run([("jailbreak", True, True, 0.9), ("chat", False, None)])
    >>> [o.status for o in run.outcomes]
    ['ok', 'error']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from shieldbench.types import (
    DatasetInfo,
    DefenseInfo,
    ErrorPolicy,
    Outcome,
    Run,
    RunConfig,
    Sample,
    Verdict,
)

__all__ = ["make_run"]

_START = datetime(2026, 1, 1, tzinfo=UTC)


def make_run(
    rows: Sequence[tuple[Any, ...]],
    *,
    run_id: str = "run",
    spec: str = "test-defense",
    dataset_hash: str = "sha256:test",
    policy: ErrorPolicy = "fail_closed",
    duration_s: float = 1.0,
    latency_ms: float = 1.0,
    ids: Sequence[str] | None = None,
) -> Run:
    """A run over ``rows`` (see the module doc); sample ids are ``s0, s1, ...``."""
    samples = []
    outcomes = []
    for i, row in enumerate(rows):
        category, is_attack, blocked = row[0], row[1], row[2]
        score = row[3] if len(row) > 3 else None
        sid = ids[i] if ids is not None else f"s{i}"
        samples.append(
            Sample(sid, f"text {i}", "attack" if is_attack else "benign", category=category)
        )
        if blocked is None:
            outcomes.append(Outcome(sid, None, "error", error="RuntimeError: boom"))
        elif blocked == "timeout":
            outcomes.append(Outcome(sid, None, "timeout", error="TimeoutError: too slow"))
        else:
            outcomes.append(
                Outcome(sid, Verdict(bool(blocked), score), "ok", latency_ms=latency_ms)
            )
    return Run(
        id=run_id,
        defense=DefenseInfo(spec, spec),
        dataset=DatasetInfo("inline", dataset_hash, len(samples)),
        config=RunConfig(error_policy=policy),
        samples=tuple(samples),
        outcomes=tuple(outcomes),
        started=_START,
        finished=_START + timedelta(seconds=duration_s),
    )
