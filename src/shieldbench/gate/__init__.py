"""A statistical CI gate: is the candidate run no worse than the baseline?

:func:`run_gate` compares two runs on the same data (same content hash) with paired
one-sided tests on block rate and false positive rate (non-inferiority with a
margin, or, with margin 0, no significant regression), absolute limits checked on
interval bounds, and a latency ratio with a bootstrap interval (see
``shieldbench.gate._checks`` for the statistics). :func:`junit_xml` and
:func:`markdown_summary` render the answer for CI systems and pull requests;
``shieldbench gate`` exits 0 (pass), 1 (a check failed) or 2 (bad input).

Example:
    >>> from shieldbench.datasets import load_dataset
    >>> from shieldbench.defenses import build_defense
    >>> from shieldbench.engine import run_defense
    >>> data = load_dataset("builtin:smoke")
    >>> base = run_defense(build_defense("pattern"), data, run_id="base")
    >>> same = run_defense(build_defense("pattern"), data, run_id="cand")
    >>> result = run_gate(same, base, GateSettings(margin=0.0))
    >>> result.passed, [c.name for c in result.checks]
    (True, ['no_regression.block_rate', 'no_regression.false_positive_rate'])
"""

from __future__ import annotations

from shieldbench.gate._checks import (
    GateCheck,
    GateResult,
    GateSettings,
    latency_ratio,
    mid_p_mcnemar,
    run_gate,
    same_run,
)
from shieldbench.gate._render import check_line, defense_labels, junit_xml, markdown_summary

__all__ = [
    "GateCheck",
    "GateResult",
    "GateSettings",
    "check_line",
    "defense_labels",
    "junit_xml",
    "latency_ratio",
    "markdown_summary",
    "mid_p_mcnemar",
    "run_gate",
    "same_run",
]
