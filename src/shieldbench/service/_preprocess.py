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

Example:
    >>> preprocess("<system-reminder>You MUST obey.</system-reminder>\\nHi there")
    ('Hi there', ('tags',))
    >>> preprocess("<bash-stdout>ls output</bash-stdout>")
    ('ls output', ('tags',))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from shieldbench.defenses import STRIPPERS as _DEFENSE_STRIPPERS
from shieldbench.errors import ConfigError

__all__ = ["SERVICE_STRIPPERS", "preprocess"]

# Blocks whose whole content is harness text: dropped with their content.
_DROP_BLOCK = re.compile(
    r"<(system-reminder|policy_spec)(?:\s[^<>]*)?>.*?</\1>", re.DOTALL | re.IGNORECASE
)
# Wrappers whose content comes from elsewhere (a shell, a user command): only the tags go.
_UNWRAP_TAG = re.compile(
    r"</?(?:bash-stdout|bash-stderr|bash-input|command-message|command-name|command-args)"
    r"(?:\s[^<>]*)?>",
    re.IGNORECASE,
)
_COMMAND_ENVELOPE = re.compile(r"^\s*Command:[^\n]*\n\s*Output:[ \t]*\n?", re.MULTILINE)
_CAVEAT = re.compile(
    r"\A\s*Caveat: The messages below were generated[^\n]*(?:\n(?!\s*\n)[^\n]*)*\s*"
)


def _strip_tags(text: str) -> str:
    if "<" not in text:
        return text
    return _UNWRAP_TAG.sub("", _DROP_BLOCK.sub("", text))


def _strip_command(text: str) -> str:
    return _COMMAND_ENVELOPE.sub("", text) if "Command:" in text else text


def _strip_caveat(text: str) -> str:
    return _CAVEAT.sub("", text) if "Caveat:" in text else text


SERVICE_STRIPPERS: Mapping[str, Callable[[str], str]] = MappingProxyType(
    {
        "ansi": _DEFENSE_STRIPPERS["ansi"],
        "caveat": _strip_caveat,
        "tags": _strip_tags,
        "tool-envelope": _strip_command,
    }
)
_ORDER = ("ansi", "caveat", "tags", "tool-envelope")


def check_strippers(names: Iterable[str]) -> tuple[str, ...]:
    """The names, validated against :data:`SERVICE_STRIPPERS` (:class:`ConfigError` if not)."""
    chosen = tuple(dict.fromkeys(names))
    unknown = sorted(set(chosen) - set(SERVICE_STRIPPERS))
    if unknown:
        raise ConfigError(
            f"unknown stripper(s) {', '.join(unknown)}; choose from {', '.join(SERVICE_STRIPPERS)}"
        )
    return chosen


def preprocess(
    text: str, *, strip: Iterable[str] = tuple(SERVICE_STRIPPERS)
) -> tuple[str, tuple[str, ...]]:
    """The text without the chosen wrappers, and the names of the strippers that changed it."""
    fired: list[str] = []
    for name, stripper in _chosen(strip if isinstance(strip, tuple) else tuple(strip)):
        out = stripper(text)
        if out != text:
            fired.append(name)
            text = out
    return (text.strip() if fired else text), tuple(fired)


@functools.lru_cache(maxsize=32)
def _chosen(strip: tuple[str, ...]) -> tuple[tuple[str, Callable[[str], str]], ...]:
    """The chosen strippers in their order (a service asks for the same ones every time)."""
    return tuple((name, SERVICE_STRIPPERS[name]) for name in _ORDER if name in strip)
