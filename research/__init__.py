"""Experiments: how shieldguard and the pipelines were chosen, kept with their results.

These scripts are not part of the installed package (nothing under ``src/`` imports
them) and not speed benchmarks (those are in ``benchmarks/``). They import each other
as ``research.<name>``, so run them from the checkout's root as modules, e.g.
``python -m research.shieldguard_eval --folds DIR``. ``README.md`` is the index; their
tests are in ``research/tests/`` (pytest puts the checkout's root on ``sys.path``).
"""
