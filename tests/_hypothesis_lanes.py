"""Hypothesis in the two test lanes: ``make test`` runs every property test in full,
``make test-fast`` runs each one with at most :data:`FAST_MAX_EXAMPLES` examples.

Registered by ``tests/conftest.py``. The full lane loads no profile: Hypothesis's
``default`` profile, so a property test runs the number of examples it states
(``@settings(max_examples=300)``) or Hypothesis's default of 100. The fast lane passes
``--hypothesis-profile=fast`` (the Makefile's ``test-fast`` target, and only that one;
``tests/test_lanes.py`` checks it). A profile alone would not be enough: an explicit
``@settings(max_examples=N)`` on a test wins over any profile, so under the ``fast``
profile :func:`pytest_collection_modifyitems` also caps each collected property test's
own settings. Only the example count changes; the strategies, the assertions and every
other setting are the test's own, so a property that fails on an early example still
fails in the fast lane (and ``make test`` searches the full space).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import is_hypothesis_test, settings

__all__ = ["FAST_MAX_EXAMPLES", "FAST_PROFILE", "capped", "in_fast_profile"]

FAST_PROFILE = "fast"
# Enough to run each property on its smallest and a few random inputs; the full lane
# runs the counts the tests state (up to 400).
FAST_MAX_EXAMPLES = 10

settings.register_profile(FAST_PROFILE, max_examples=FAST_MAX_EXAMPLES)

# Where Hypothesis keeps a ``@given`` test's settings (``hypothesis.seed`` and the
# ``@settings`` decorator write the same attribute). If a Hypothesis release renames it,
# the fast lane stops with an error instead of quietly running the full counts.
_SETTINGS_ATTRIBUTE = "_hypothesis_internal_use_settings"


def in_fast_profile() -> bool:
    """Whether this session runs the fast lane's Hypothesis profile."""
    return settings.get_current_profile_name() == FAST_PROFILE


def capped(current: settings) -> settings:
    """``current`` with at most :data:`FAST_MAX_EXAMPLES` examples, all else unchanged."""
    return settings(current, max_examples=min(current.max_examples, FAST_MAX_EXAMPLES))


def _cap(test: Any, where: str) -> None:
    function = getattr(test, "__func__", test)  # a test method: the function under it
    current = getattr(function, _SETTINGS_ATTRIBUTE, None)
    if not isinstance(current, settings):
        raise pytest.UsageError(
            f"{where}: no Hypothesis settings found on the test ({_SETTINGS_ATTRIBUTE}); "
            "this Hypothesis release keeps them elsewhere, update tests/_hypothesis_lanes.py"
        )
    setattr(function, _SETTINGS_ATTRIBUTE, capped(current))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under the ``fast`` profile, cap the examples of every collected property test."""
    if not in_fast_profile():
        return
    for item in items:
        test = getattr(item, "obj", None)
        if test is not None and is_hypothesis_test(test):
            _cap(test, item.nodeid)
