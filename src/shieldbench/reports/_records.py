"""The records both the report model and its attack section use.

:class:`ReportSettings` (the knobs a report was built with) and
:class:`Recommendation` (one action derived from the numbers). They live apart from
``_model`` so that ``_attack_section``, which ``_build`` and ``_recommend`` use, can use them
without importing ``_model`` (no import cycle); ``_model`` re-exports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Priority", "Recommendation", "ReportSettings"]

Priority = Literal["critical", "warning", "info"]


@dataclass(frozen=True, slots=True)
class ReportSettings:
    """The knobs a report was built with (reported with it).

    ``max_fpr`` is the reader's policy ("FPR at most 2%"), drawn as a line on the
    security / utility plane; ``None`` when none was given.
    """

    margin: float
    examples: int
    coverage_target: float
    target_fpr: float
    text_limit: int
    max_fpr: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "margin": self.margin,
            "examples_per_category": self.examples,
            "coverage_target": self.coverage_target,
            "target_fpr": self.target_fpr,
            "text_limit": self.text_limit,
            "max_fpr": self.max_fpr,
        }


@dataclass(frozen=True, slots=True)
class Recommendation:
    """One action derived from the numbers by a named rule.

    ``priority`` is ``critical`` (the defense fails at its job), ``warning`` (a
    figure to act on) or ``info``; ``subject`` names the run, comparison or
    attack it is about; ``evidence`` holds the numbers the rule used.
    """

    priority: Priority
    rule: str
    subject: str
    message: str
    evidence: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "priority": self.priority,
            "rule": self.rule,
            "subject": self.subject,
            "message": self.message,
            "evidence": dict(self.evidence),
        }
