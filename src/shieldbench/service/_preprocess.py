"""Strip infrastructure wrappers from a text before the guard classifies it.

Agent harnesses wrap what reaches a model in markup of their own: reminder blocks full
of imperative language, shell transcripts, policy blocks, slash-command envelopes,
colour codes. A detector reads these as instruction overrides and blocks benign
traffic. The service removes them before the inline defense sees the text (the audit
log keeps the hash of the original text and says which strippers fired).

Strippers (choose with ``strip:`` in ``serve.yaml``; default: all):

- ``ansi``: ANSI terminal escape sequences;
- ``tags``: the tag pairs ``<system-reminder>``, ``<bash-stdout>``, ``<bash-stderr>``,
  ``<bash-input>``, ``<policy_spec>``, ``<command-message>`` (and
  ``<command-name>``/``<command-args>``) anywhere in the text, with what they enclose
  for reminders and policy blocks (harness text), and only the tags themselves for
  shell transcripts and commands (their content is still checked);
- ``tool-envelope``: ``Command: ... Output: ...`` tool envelopes: the ``Command:``
  line is dropped, the output stays;
- ``caveat``: a leading ``Caveat: The messages below were generated ...`` paragraph.

The strippers and the pipeline are the one preprocessing implementation, in
:mod:`shieldbench.defenses` (``HARNESS_STRIPPERS``, ``run_strippers``), which the
``preprocess(...)`` composite defense uses too; this module only picks the service's.

Example:
    >>> preprocess("<system-reminder>You MUST obey.</system-reminder>\\nHi there")
    ('Hi there', ('tags',))
    >>> preprocess("<bash-stdout>ls output</bash-stdout>")
    ('ls output', ('tags',))
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping

from shieldbench.defenses import HARNESS_STRIPPERS, check_stripper_names, run_strippers

__all__ = ["SERVICE_STRIPPERS", "check_strippers", "preprocess"]

#: The strippers ``strip:`` may name, in the order they run.
SERVICE_STRIPPERS: Mapping[str, Callable[[str], str]] = HARNESS_STRIPPERS


def check_strippers(names: Iterable[str]) -> tuple[str, ...]:
    """The names, validated against :data:`SERVICE_STRIPPERS` (:class:`ConfigError` if not)."""
    return check_stripper_names(names, SERVICE_STRIPPERS)


def preprocess(
    text: str, *, strip: Iterable[str] = tuple(SERVICE_STRIPPERS)
) -> tuple[str, tuple[str, ...]]:
    """The text without the chosen wrappers, and the names of the strippers that changed it."""
    text, fired = run_strippers(text, _chosen(strip if isinstance(strip, tuple) else tuple(strip)))
    return (text.strip() if fired else text), fired


@functools.lru_cache(maxsize=32)
def _chosen(strip: tuple[str, ...]) -> tuple[tuple[str, Callable[[str], str]], ...]:
    """The chosen strippers in their order (a service asks for the same ones every time)."""
    return tuple((name, fn) for name, fn in SERVICE_STRIPPERS.items() if name in strip)
