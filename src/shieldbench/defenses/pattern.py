"""The ``pattern`` reference defense, under its public module name.

The code lives in :mod:`shieldbench.defenses.rules` (the rule-based family); this
module keeps ``shieldbench.defenses.pattern`` importable, e.g. for
``python(shieldbench.defenses.pattern:PatternDefense, threshold=0.6)``.
"""

from __future__ import annotations

from shieldbench.defenses.rules._pattern import (
    DEFAULT_THRESHOLD,
    FAMILIES,
    HIDDEN_MIN_WEIGHT,
    RULES,
    PatternDefense,
    Rule,
    compile_rule_set,
    noisy_or,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "FAMILIES",
    "HIDDEN_MIN_WEIGHT",
    "RULES",
    "PatternDefense",
    "Rule",
    "compile_rule_set",
    "noisy_or",
]
