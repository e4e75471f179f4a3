"""Rule-based defenses: no model, no network, deterministic.

- ``_pattern``: the ``pattern`` defense (weighted RE2 rules, noisy-OR score); public
  as :mod:`shieldbench.defenses.pattern`.
- ``_normalize``: the text normalisation ``pattern`` runs first, and the evasion
  signals it finds.
- ``_rules``, ``_rules_jailbreak``, ``_rules_i18n``: the rules themselves.
"""
